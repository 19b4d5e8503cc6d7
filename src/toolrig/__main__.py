from toolrig.cli import main

main()
