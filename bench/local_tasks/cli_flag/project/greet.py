import argparse


def greeting(name):
    return f"Hello, {name}!"


def main(argv=None):
    parser = argparse.ArgumentParser(description="Greet someone.")
    parser.add_argument("name", help="who to greet")
    args = parser.parse_args(argv)
    print(greeting(args.name))


if __name__ == "__main__":
    main()
