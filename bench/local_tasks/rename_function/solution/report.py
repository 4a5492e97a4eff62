from geometry import perimeter, rectangle_area


def describe(width, height):
    return f"{width}x{height}: area {rectangle_area(width, height)}, perimeter {perimeter(width, height)}"


def total_area(rooms):
    return sum(rectangle_area(width, height) for width, height in rooms)
