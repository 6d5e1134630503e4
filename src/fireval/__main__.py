from fireval.cli import main

main()
