from wyckoff.cli.app import main

main()
