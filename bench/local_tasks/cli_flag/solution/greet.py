import argparse


def greeting(name):
    return f"Hello, {name}!"


def main(argv=None):
    parser = argparse.ArgumentParser(description="Greet someone.")
    parser.add_argument("name", help="who to greet")
    parser.add_argument("--shout", action="store_true", help="print the greeting in upper case")
    args = parser.parse_args(argv)
    text = greeting(args.name)
    print(text.upper() if args.shout else text)


if __name__ == "__main__":
    main()
