"""Render a terminal capture with ANSI colours (``tmux capture-pane -e -p``) as a PNG.

    python scripts/terminal_png.py capture.ansi out.png [--cols 80 --rows 24]

One cell per character in DejaVu Sans Mono (fonts-dejavu-core), the colours of rich's
default terminal theme on a dark background. Used for the screenshots in docs/.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont
from rich.ansi import AnsiDecoder
from rich.terminal_theme import MONOKAI

FONTS = Path("/usr/share/fonts/truetype/dejavu")
SIZE, PAD = 16, 12


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("capture", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--cols", type=int, default=80)
    ap.add_argument("--rows", type=int, default=24)
    args = ap.parse_args()

    regular = ImageFont.truetype(str(FONTS / "DejaVuSansMono.ttf"), SIZE)
    fonts = {(b, i): ImageFont.truetype(str(FONTS / f"DejaVuSansMono{name}.ttf"), SIZE)
             for (b, i), name in {(False, False): "", (True, False): "-Bold",
                                  (False, True): "-Oblique", (True, True): "-BoldOblique"}.items()}
    cell_w = regular.getlength("M")  # exact advance: box-drawing lines join up
    cell_h = round(SIZE * 1.3)
    theme = MONOKAI
    bg, fg = theme.background_color.hex, theme.foreground_color
    img = Image.new("RGB", (2 * PAD + round(args.cols * cell_w), 2 * PAD + args.rows * cell_h),
                    bg)
    draw = ImageDraw.Draw(img)
    text = args.capture.read_text(encoding="utf-8")
    for row, line in enumerate(list(AnsiDecoder().decode(text))[:args.rows]):
        col = 0
        for segment_text, style in _cells(line):
            for ch in segment_text:
                if col >= args.cols:
                    break
                color = fg
                if style is not None and style.color is not None:
                    color = style.color.get_truecolor(theme)
                if style is not None and style.dim:
                    color = type(color)(*((c + b) // 2 for c, b in
                                          zip(color, theme.background_color, strict=True)))
                font = fonts[bool(style and style.bold), bool(style and style.italic)]
                draw.text((PAD + col * cell_w, PAD + row * cell_h), ch, font=font,
                          fill=color.hex)
                col += 1
    img.save(args.out, optimize=True)


def _cells(line):
    """(text, style) runs of a decoded line."""
    from rich.console import Console

    console = Console(width=10_000, color_system="truecolor")
    for seg in line.render(console):
        yield seg.text, seg.style


if __name__ == "__main__":
    main()
