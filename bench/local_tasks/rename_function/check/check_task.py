from pathlib import Path

import geometry
import report

assert geometry.rectangle_area(2, 3) == 6, "geometry.rectangle_area is wrong"
assert not hasattr(geometry, "calc_area"), "geometry.calc_area still exists"
assert "calc_area" not in Path("report.py").read_text(), "report.py still uses calc_area"
assert report.describe(2, 3) == "2x3: area 6, perimeter 10", report.describe(2, 3)
assert report.total_area([(2, 3), (1, 1)]) == 7
print("ok")
