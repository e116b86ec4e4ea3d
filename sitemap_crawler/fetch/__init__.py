"""fetch: polite HTTP for one worker process, with every size limit holding after decoding.

``client.Fetcher`` sends one request at a time through the host gate (protocol.hostgate:
one request per ``request_delay`` per host across all workers and machines), honours
robots.txt (``robots``), retries with backoff and Retry-After, and reads bodies raw so that
``decoding`` can undo Content-Encoding in bounded steps; ``charset`` decodes HTML the way
browsers do.

May import: the base modules and ``protocol`` (the host gate).  Nothing from discover,
convert or commands.
"""
