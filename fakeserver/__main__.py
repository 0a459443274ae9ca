"""`python -m fakeserver`: the test server's command line."""

from fakeserver.cli import main

if __name__ == "__main__":
    main()
