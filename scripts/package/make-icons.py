"""Draw Dyno's app icon (a dial with its needle in the fast zone) at every
size Tauri's bundler wants, into icons/. Run: python3 scripts/package/make-icons.py
(needs Pillow). The PNGs are committed; this script is how to remake them."""
import math
from pathlib import Path

from PIL import Image, ImageDraw

OUT = Path(__file__).resolve().parents[2] / "icons"
S = 1024  # drawn once large, then scaled down


def draw() -> Image.Image:
    img = Image.new("RGBA", (S, S), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    d.rounded_rectangle((40, 40, S - 40, S - 40), radius=200, fill=(15, 23, 42, 255))
    cx, cy, r = S / 2, S * 0.60, S * 0.34
    box = (cx - r, cy - r, cx + r, cy + r)
    # The dial: a slow (blue) to fast (amber) arc over the top half.
    d.arc(box, start=180, end=290, fill=(56, 189, 248, 255), width=70)
    d.arc(box, start=290, end=360, fill=(245, 158, 11, 255), width=70)
    # The needle, well into the fast zone.
    a = math.radians(-28)
    tip = (cx + (r - 20) * math.cos(a), cy + (r - 20) * math.sin(a))
    d.line((cx, cy, *tip), fill=(226, 232, 240, 255), width=46)
    d.ellipse((cx - 58, cy - 58, cx + 58, cy + 58), fill=(226, 232, 240, 255))
    return img


def main() -> None:
    OUT.mkdir(exist_ok=True)
    big = draw()
    for name, size in [("32x32.png", 32), ("128x128.png", 128), ("128x128@2x.png", 256),
                       ("icon.png", 512)]:
        big.resize((size, size), Image.LANCZOS).save(OUT / name)
    big.save(OUT / "icon.ico", sizes=[(16, 16), (32, 32), (48, 48), (64, 64), (128, 128), (256, 256)])
    big.resize((512, 512), Image.LANCZOS).save(OUT / "icon.icns")


if __name__ == "__main__":
    main()
