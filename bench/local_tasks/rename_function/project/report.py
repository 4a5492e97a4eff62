from geometry import calc_area, perimeter


def describe(width, height):
    return f"{width}x{height}: area {calc_area(width, height)}, perimeter {perimeter(width, height)}"


def total_area(rooms):
    return sum(calc_area(width, height) for width, height in rooms)
