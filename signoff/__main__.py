from signoff.cli import main

main()
