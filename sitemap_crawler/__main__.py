from sitemap_crawler.cli import main

main()
