from dptext.cli import main

main()
