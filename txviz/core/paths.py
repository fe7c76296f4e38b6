"""Where the project's files live: one place instead of `Path(__file__).parents[n]` in every module."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "assets"
PAGES = ROOT / "pages"
MODELS = ASSETS / "models"
LESSONS = ASSETS / "lessons"
LECTURES = ASSETS / "lectures"
IMAGES = ASSETS / "images"
