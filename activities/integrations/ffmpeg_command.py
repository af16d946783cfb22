"""What a task may ask of ffmpeg: an allow-list of options, each with the values it may take, of formats,
codecs and filters, and of file names (the given inputs, and plain names in ffmpeg's folder for outputs).

Anything not listed is refused, naming the word: ffmpeg's option language names files, URLs and devices in
dozens of ways (protocols, `subfile:`, `tee`, concat and HLS lists, `movie=` filter sources, `/option=file`,
`-dump_attachment`, `pipe:`), so the list says what may be asked, never what may not. The process is also
confined (activities/confined.py): this list is the first wall, not the only one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

MAX_OUTPUTS = 8  # Julep's answer carries one file; a few more let a task split streams
# Past any real command line, and well within what the kernel takes for one (E2BIG otherwise).
MAX_WORDS = 1000
MAX_WORD_CHARS = 10_000


class Refused(ValueError):
    """A word of the command is not allowed; the message names it."""


def _pattern(regex: str, what: str) -> Callable[[str], None]:
    compiled = re.compile(regex)

    def check(value: str) -> None:
        if not compiled.fullmatch(value):
            raise Refused(f"{value!r} is not {what}")

    return check


def _one_of(names: frozenset[str], what: str, also: str = r"(?!)") -> Callable[[str], None]:
    extra = re.compile(also)

    def check(value: str) -> None:
        if value not in names and not extra.fullmatch(value):
            raise Refused(f"{value!r} is not {what} a task may use ({', '.join(sorted(names)[:12])}, ...)")

    return check


# Muxers and demuxers of media files: none reads or writes a list of other files or a URL (concat, hls, dash,
# tee, segment, image2 patterns, lavfi, ffmetadata are left out).
FORMATS = frozenset(
    "mp4 mov m4a 3gp ipod matroska mkv webm mp3 wav ogg oga opus flac aac adts ac3 eac3 aiff au caf w64 wv "
    "avi flv mpegts mpeg m4v gif apng webp image2 mjpeg png_pipe jpeg_pipe h264 hevc rawvideo null "
    "u8 s8 s16le s16be s24le s32le f32le f32be f64le mulaw alaw amr".split()
)
# What may be probed when a task gives no format (ffmpeg's -format_whitelist, demuxer names).
DEMUXERS = "mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,mp3,wav,ogg,flac,aac,ac3,eac3,aiff,au,caf,w64,wv,avi,flv,\
mpegts,mpeg,m4v,gif,apng,webp_pipe,image2,mjpeg,png_pipe,jpeg_pipe,bmp_pipe,h264,hevc,rawvideo,u8,s8,s16le,\
s16be,s24le,s32le,f32le,f32be,f64le,mulaw,alaw,amr"
CODECS = frozenset(
    "copy libx264 libx265 h264 hevc mpeg4 mpeg2video mpeg1video libvpx libvpx-vp9 vp8 vp9 libaom-av1 av1 "
    "libsvtav1 libdav1d mjpeg png gif apng webp libwebp rawvideo aac libmp3lame mp3 libopus opus libvorbis "
    "vorbis flac alac ac3 eac3 mp2 wavpack libfdk_aac".split()
)
FILTERS = frozenset(
    "scale crop pad fps format trim atrim setpts asetpts volume atempo aresample aformat transpose hflip vflip "
    "rotate concat overlay split asplit amix amerge pan loudnorm afade fade null anull boxblur gblur eq hue "
    "negate colorchannelmixer palettegen paletteuse select aselect silenceremove highpass lowpass equalizer "
    "setsar setdar tile thumbnail zoompan drawbox unsharp yadif reverse areverse apad adelay acrossfade xfade "
    "hstack vstack scale2ref chromakey colorkey showwaves showspectrum showwavespic channelsplit "
    "dynaudnorm acompressor alimiter afftdn anlmdn agate compand atadenoise hqdn3d nlmeans deband "
    "framerate minterpolate tpad loop aloop setparams colorspace lut lutrgb lutyuv curves vignette "
    "crossfeed stereotools extrastereo earwax bass treble".split()
)
BITSTREAM_FILTERS = frozenset("h264_mp4toannexb hevc_mp4toannexb aac_adtstoasc null".split())

FLAG = None  # an option without a value
INPUT = "input"  # -i: one of the given files
NUMBER = _pattern(r"-?\d{1,9}(\.\d{1,9})?", "a number")
COUNT = _pattern(r"-?\d{1,9}", "a whole number")
THREADS = _pattern(r"\d|1[0-6]", "a thread count from 0 to 16")
RATE = _pattern(r"\d{1,9}(\.\d{1,6})?(/\d{1,9})?|ntsc|pal|film|ntsc-film|qntsc|qpal", "a rate")
BITRATE = _pattern(r"\d{1,9}(\.\d{1,6})?[kKmMgG]?", "a bit rate")
SIZE = _pattern(r"\d{1,5}x\d{1,5}|[a-z0-9]{2,10}", "a size (WxH)")
RATIO = _pattern(r"\d{1,5}([:/]\d{1,5}|\.\d{1,6})?", "an aspect ratio")
TIME = _pattern(r"-?(\d{1,9}(\.\d{1,9})?(s|ms|us)?|(\d{1,3}:)?\d{1,2}:\d{1,2}(\.\d{1,9})?)", "a time")
WORD = _pattern(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,63}", "a plain word")
MAP = _pattern(r"-?(\d{1,3}(:[A-Za-z0-9]{1,16}){0,3}\??|\[[A-Za-z0-9_:]{1,32}\])", "a stream map")
FLAGS = _pattern(r"[+-]?[a-z_]{1,32}([+-][a-z_]{1,32}){0,8}", "a list of flags")
METADATA = _pattern(r"[A-Za-z0-9_]{1,64}=[^\x00-\x1f]{0,512}", "key=value metadata")
FORMAT = _one_of(FORMATS, "a format")
CODEC = _one_of(CODECS, "a codec", also=r"pcm_[a-z0-9]{2,12}")
BSF = _one_of(BITSTREAM_FILTERS, "a bitstream filter")


def _filtergraph(value: str) -> None:
    for name, args in filters(value):
        if name not in FILTERS:
            raise Refused(f"the filter {name!r} is not one a task may use")
        # ffmpeg 7+ reads an option from a file when its name starts with `/` (`volume=/volume=path`). Its
        # escaping has levels (`\:` at the graph's becomes `:` at the filter's), so whatever the quotes and
        # backslashes: a `/` may only follow a name, a number or a bracket (`iw/2`, `(a+b)/2`).
        plain = re.sub(r"[\\']", "", args)
        if re.search(r"(^|[^A-Za-z0-9_)\]])/", plain) or ".." in plain:
            raise Refused(f"a filter option may not name a file ({args!r})")


FILTERGRAPH = _filtergraph

# option -> what its value must be; True in the second place: it takes a stream specifier (`-c:v`, `-b:a:0`).
Check = Callable[[str], None] | str | None
OPTIONS: dict[str, tuple[Check, bool]] = {
    # (not -re: reading at the input's own pace idles, and would hold a slot without spending CPU time)
    **{name: (FLAG, False) for name in "y n nostdin hide_banner nostats stats shortest copyts".split()},
    **{name: (FLAG, True) for name in "vn an sn dn".split()},
    "i": (INPUT, False),
    "f": (FORMAT, False),
    **{name: (CODEC, True) for name in ("c", "codec", "vcodec", "acodec")},
    **{name: (BITRATE, True) for name in ("b", "ab", "vb", "maxrate", "minrate", "bufsize", "fs")},
    "r": (RATE, True),
    "ar": (COUNT, True),
    "ac": (COUNT, True),
    "s": (SIZE, True),
    "aspect": (RATIO, True),
    **{name: (TIME, False) for name in ("ss", "t", "to", "sseof", "itsoffset")},
    **{name: (FILTERGRAPH, False) for name in ("vf", "af", "filter_complex", "lavfi")},
    "filter": (FILTERGRAPH, True),
    "map": (MAP, False),
    "map_metadata": (COUNT, False),
    "map_chapters": (COUNT, False),
    **{name: (COUNT, True) for name in ("frames", "g", "bf", "qp")},
    **{name: (COUNT, False) for name in ("vframes", "aframes", "loop", "stream_loop", "start_number")},
    **{name: (COUNT, False) for name in ("update", "max_muxing_queue_size")},
    **{name: (NUMBER, True) for name in ("q", "qscale", "crf")},
    **{name: (WORD, True) for name in ("preset", "tune", "profile", "level", "pix_fmt", "sample_fmt")},
    **{name: (WORD, True) for name in ("fps_mode", "tag", "disposition", "ch_layout", "channel_layout")},
    **{name: (WORD, False) for name in ("loglevel", "v", "vsync", "strict", "avoid_negative_ts")},
    "movflags": (FLAGS, False),
    "threads": (THREADS, False),
    "metadata": (METADATA, True),
    "bsf": (BSF, True),
}
STREAM_SPECIFIER = re.compile(r"[A-Za-z0-9]{1,16}(:[A-Za-z0-9]{1,16}){0,3}")
# [labels] name[@id][=arguments] [labels]
FILTER = re.compile(
    r"\s*(?:\[[^\]]*\]\s*)*([A-Za-z0-9_]+)(?:@[A-Za-z0-9_]+)?(?:=(.*?))?(?:\s*\[[^\]]*\])*\s*", re.S
)
OUTPUT_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}(\.[A-Za-z0-9]{1,10})?")
# ffmpeg picks the muxer from an output's extension when no -f says: only media files' (no .m3u8, .ffconcat,
# .mpd or image sequences); a name without one needs -f.
EXTENSIONS = frozenset(
    "mp4 m4a m4v mov 3gp mkv mka webm mp3 wav ogg oga opus flac aac ac3 aiff au caf wv avi flv ts mpg mpeg "
    "gif apng png jpg jpeg webp raw pcm h264 264 hevc 265 json txt out".split()
)


@dataclass(frozen=True)
class Command:
    argv: list[str]  # what ffmpeg is run with
    outputs: list[str]


def parse(words: list[str], given: set[str]) -> Command:
    """The arguments ffmpeg is run with, checked word by word against the allow-list; `given` are the input
    files' names. Raises Refused naming the first word that is not allowed."""
    if len(words) > MAX_WORDS or any(len(word) > MAX_WORD_CHARS for word in words):
        raise Refused(f"a command has at most {MAX_WORDS} words of at most {MAX_WORD_CHARS} characters")
    argv = ["-nostdin", "-hide_banner", "-y"]
    outputs: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        if not word.startswith("-") or word == "-":
            argv.append(_output(word, given, outputs))
            index += 1
            continue
        name, _, specifier = word[1:].partition(":")
        if name not in OPTIONS:
            raise Refused(f"the option {word!r} is not one a task may use")
        check, per_stream = OPTIONS[name]
        if specifier and not (per_stream and STREAM_SPECIFIER.fullmatch(specifier)):
            raise Refused(
                f"{word!r}: {'a bad stream specifier' if per_stream else 'takes no stream specifier'}"
            )
        if check is FLAG:
            argv.append(word)
            index += 1
            continue
        if index + 1 >= len(words):
            raise Refused(f"the option {word!r} needs a value")
        value = words[index + 1]
        if check == INPUT:
            if value not in given:
                raise Refused(
                    f"-i takes one of the files given in `file` ({', '.join(sorted(given)) or 'none'})"
                )
            # Read only local files, and only media: no URL, no list of other files.
            argv += ["-protocol_whitelist", "file", "-format_whitelist", DEMUXERS]
        else:
            assert callable(check)
            check(value)
        argv += [word, value]
        index += 2
    if not outputs:
        raise Refused("the command names no output file")
    return Command(argv, outputs)


def _output(word: str, given: set[str], outputs: list[str]) -> str:
    if not OUTPUT_NAME.fullmatch(word):
        raise Refused(
            f"{word!r} is not a plain file name: ffmpeg may only write files in its own folder "
            "(letters, digits, `_`, `-` and an extension)"
        )
    if word in given:
        raise Refused(f"{word!r} is an input file; write the output under another name")
    extension = word.rpartition(".")[2].lower() if "." in word else None
    if extension is not None and extension not in EXTENSIONS:
        raise Refused(f"{word!r}: an output may end in .{', .'.join(sorted(EXTENSIONS)[:10])}, ... only")
    outputs.append(word)
    if len(outputs) > MAX_OUTPUTS:
        raise Refused(f"at most {MAX_OUTPUTS} output files")
    return word


def filters(graph: str) -> list[tuple[str, str]]:
    """(name, arguments) of each filter in a filtergraph: chains split at `;`, filters at `,`, link labels
    (`[in]`, `[0:v]`) taken off both ends; quotes and backslashes are read as ffmpeg reads them."""
    found = []
    for chain in _split(graph, ";"):
        for spec in _split(chain, ","):
            match = FILTER.fullmatch(spec)
            if match is None:
                raise Refused(f"cannot read the filter {spec.strip()!r}")
            found.append((match.group(1), match.group(2) or ""))
    return found


def _split(text: str, separator: str) -> list[str]:
    """`text` split at `separator` outside quotes and link labels, and not escaped with a backslash (as
    ffmpeg's own tokenizer reads it: a label runs to its `]` whatever it holds)."""
    parts, current, quoted, in_label, escaped = [], "", False, False, False
    for char in text:
        if in_label:
            in_label = char != "]"
        elif escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "'":
            quoted = not quoted
        elif char == "[" and not quoted:
            in_label = True
        elif char == separator and not quoted:
            parts.append(current)
            current = ""
            continue
        current += char
    if quoted or in_label:
        raise Refused(f"an unclosed quote or label in {text!r}")
    return [*parts, current]
