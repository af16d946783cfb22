"""remote_browser's keyboard: xdotool's key names (`Return`, `ctrl+a`), as Anthropic's computer-use tool
writes them, as the DOM keys, codes and key events Chrome's DevTools Protocol takes (a US keyboard)."""

from __future__ import annotations

from activities.egress import brief_repr
from contracts.json import JsonObject
from infra.temporal import errors

ALT, CONTROL, META, SHIFT = 1, 2, 4, 8
MODIFIERS = {"Alt": ALT, "Control": CONTROL, "Meta": META, "Shift": SHIFT}
# A DOM key, its code and windowsVirtualKeyCode on Chrome's US keyboard, and xdotool's other names for it.
KEY_TABLE = """
Enter       Enter        13  return kp_enter
Escape      Escape       27  esc
PageUp      PageUp       33  page_up prior
PageDown    PageDown     34  page_down next
ArrowLeft   ArrowLeft    37  left
ArrowUp     ArrowUp      38  up
ArrowRight  ArrowRight   39  right
ArrowDown   ArrowDown    40  down
Shift       ShiftLeft    16  shift_l shift_r
Control     ControlLeft  17  ctrl control_l control_r
Alt         AltLeft      18  alt_l alt_r option
Meta        MetaLeft     91  super super_l super_r cmd command win
"""
ROWS = [line.split() for line in KEY_TABLE.strip().splitlines()]
KEYS = {r[0]: (r[1], int(r[2])) for r in ROWS} | {f"F{n}": (f"F{n}", 111 + n) for n in range(1, 13)}
KEYS |= {k: (k, n) for k, n in (("Tab", 9), ("Backspace", 8), ("Delete", 46), ("Home", 36), ("End", 35))}
KEYS |= {"Insert": ("Insert", 45), " ": ("Space", 32)}
NAMES = {n: r[0] for r in ROWS for n in r[3:]} | {k.lower(): k for k in KEYS}
NAMES |= {"space": " ", "minus": "-", "plus": "+"}


def key_event(kind: str, key: str, mods: int) -> JsonObject:
    """Input.dispatchKeyEvent's parameters for one key going down or up with these modifiers held."""
    if key in KEYS:
        (code, number), text = KEYS[key], "\r" if key == "Enter" else key if len(key) == 1 else ""
    else:  # one character
        upper = key.upper()
        code = f"Key{upper}" if "A" <= upper <= "Z" else f"Digit{key}" if "0" <= key <= "9" else ""
        key = upper if mods & SHIFT and code.startswith("Key") else key
        number, text = (ord(upper) if code else 0), key
    text = "" if mods & (ALT | CONTROL | META) else text  # a shortcut types nothing
    kind = kind if kind == "keyUp" or text else "rawKeyDown"
    params: JsonObject = {
        "type": kind,
        "key": key,
        "code": code,
        "windowsVirtualKeyCode": number,
        "modifiers": mods,
    }
    if kind == "keyDown":
        params.update(text=text, unmodifiedText=text)
    return params


def combinations(text: str) -> list[list[str]]:
    """`ctrl+a Delete` as [["Control", "a"], ["Delete"]]."""
    return [[_key(n) for n in c.split("+")] if c != "+" else ["+"] for c in text.split() or [text]]


def _key(name: str) -> str:
    key = NAMES.get(name.lower(), name)
    if key in KEYS or len(key) == 1:
        return key
    raise errors.permanent(
        f"remote_browser: unknown key {brief_repr(name)} (xdotool's names: Return, Tab, ctrl+a, Page_Down, ...)",
        "BadToolCall",
    )
