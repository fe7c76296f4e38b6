"""The Image GPT page's subtitle counts pixels and grey levels as the data holds them."""

from __future__ import annotations

from conftest import ROOT
from streamlit.testing.v1 import AppTest

from txviz.imagegpt import data


def test_subtitle_says_64_pixels_each_one_of_17_grey_levels() -> None:
    at = AppTest.from_file(str(ROOT / "pages/12_Image_GPT.py"), default_timeout=240).run()
    intro = at.caption[0].value
    x_train = data.split()[0]
    assert data.N_PIXELS == 64 and data.N_LEVELS == 17 == int(x_train.max()) + 1  # levels 0..16 occur
    assert "64 pixels in raster order, each one of 17 grey levels" in intro
    assert "64 grey levels" not in intro
