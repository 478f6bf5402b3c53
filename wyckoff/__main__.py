from wyckoff.cli.launcher import main

main()
