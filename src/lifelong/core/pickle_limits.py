"""The limits of `lifelong.core.safe_pickle` and its opcode pre-scan, run before a pickle from elsewhere is loaded.

`Limits` holds the budgets (a file's bytes, the objects it builds, their nesting) and makes the one error,
`PickleLimitError`, that names the file, what was passed and the parameter that allows more. `scan(data, limits)`
reads the opcodes once, in pure Python, building nothing: every length field must fit in the bytes left, every
memo index in the objects built before it; objects are counted and their depth tracked.
"""

from __future__ import annotations

import pickle
import pickletools
import struct
from dataclasses import dataclass

MAX_BYTES = 2 * 1024**3
MAX_ITEMS = 20_000_000
MAX_DEPTH = 100


class UnsafePickleError(pickle.UnpicklingError):
    """A pickle that references a class or function outside the data kinds `DataUnpickler` builds."""


class PickleLimitError(UnsafePickleError):
    """A pickle beyond a budget of `load_data_pickle`, or whose lengths, memo indices or array shapes claim more
    than its bytes hold; the message names the file, the budget and the parameter that sets it."""


@dataclass(frozen=True)
class Limits:
    what: str
    max_bytes: int = MAX_BYTES
    max_items: int = MAX_ITEMS
    max_depth: int = MAX_DEPTH

    def refuse(self, problem: str, budget: str = "") -> PickleLimitError:
        """The error for `problem`; `budget` names the parameter that allows more."""
        value = f"{getattr(self, budget):,}" if budget else ""
        hint = f" (the {budget}={value} budget of load_data_pickle; raise it for a file you trust)" if budget else ""
        return PickleLimitError(f"{self.what} {problem}{hint}")


# ---------------------------------------------------------------------------------------------------------------
# The opcode pre-scan: the C unpickler allocates a length field's claim before reading it (BINBYTES8, BYTEARRAY8),
# sizes its memo by the largest index it is told (a 10-byte pickle can ask for 64 GiB), and hashes dict keys
# recursively (a tuple nested a million deep overflows the C stack). The scan refuses all three before loading.

_LEAF, _COUNTED, _MUTABLE_BYTES, _LINE, _EMPTY, _MARK, _FROM_MARK, _INST, _TUPLE_N, _ADD, _ADD_MARK = range(1, 12)
_BUILD, _CALL, _POP, _POP_MARK, _DUP, _PUT, _GET, _SKIP, _FRAME, _STOP = range(12, 22)
_OPS = {  # opcode -> (kind, n): n is the argument's size, the length field's width, or the items taken off the stack
    **dict.fromkeys(["NONE", "NEWTRUE", "NEWFALSE", "NEXT_BUFFER"], (_LEAF, 0)),
    **{"BININT": (_LEAF, 4), "BININT1": (_LEAF, 1), "BININT2": (_LEAF, 2), "BINFLOAT": (_LEAF, 8)},
    **{"EXT1": (_LEAF, 1), "EXT2": (_LEAF, 2), "EXT4": (_LEAF, 4)},
    **dict.fromkeys(["SHORT_BINSTRING", "SHORT_BINBYTES", "SHORT_BINUNICODE", "LONG1"], (_COUNTED, 1)),
    **dict.fromkeys(["BINSTRING", "BINBYTES", "BINUNICODE", "LONG4"], (_COUNTED, 4)),
    **dict.fromkeys(["BINBYTES8", "BINUNICODE8"], (_COUNTED, 8)),
    "BYTEARRAY8": (_MUTABLE_BYTES, 8),
    **dict.fromkeys(["INT", "LONG", "FLOAT", "STRING", "UNICODE", "PERSID"], (_LINE, 1)),
    "GLOBAL": (_LINE, 2),
    **dict.fromkeys(["EMPTY_LIST", "EMPTY_DICT", "EMPTY_TUPLE", "EMPTY_SET"], (_EMPTY, 0)),
    "MARK": (_MARK, 0),
    **dict.fromkeys(["TUPLE", "LIST", "DICT", "FROZENSET", "OBJ"], (_FROM_MARK, 0)),
    "INST": (_INST, 2),
    **{"TUPLE1": (_TUPLE_N, 1), "TUPLE2": (_TUPLE_N, 2), "TUPLE3": (_TUPLE_N, 3)},
    **{"APPEND": (_ADD, 1), "SETITEM": (_ADD, 2), "BUILD": (_BUILD, 1)},
    **dict.fromkeys(["APPENDS", "SETITEMS", "ADDITEMS"], (_ADD_MARK, 0)),
    **{"REDUCE": (_CALL, 2), "NEWOBJ": (_CALL, 2), "NEWOBJ_EX": (_CALL, 3), "STACK_GLOBAL": (_CALL, 2)},
    "BINPERSID": (_CALL, 1),
    **{"POP": (_POP, 0), "POP_MARK": (_POP_MARK, 0), "DUP": (_DUP, 0)},
    **{"PUT": (_PUT, -1), "BINPUT": (_PUT, 1), "LONG_BINPUT": (_PUT, 4), "MEMOIZE": (_PUT, 0)},
    **{"GET": (_GET, -1), "BINGET": (_GET, 1), "LONG_BINGET": (_GET, 4)},
    **{"PROTO": (_SKIP, 1), "READONLY_BUFFER": (_SKIP, 0), "FRAME": (_FRAME, 8), "STOP": (_STOP, 0)},
}
_TABLE: list[tuple[int, int]] = [(0, 0)] * 256  # opcode byte -> (kind, n); kind 0: not an opcode
_NAME = [""] * 256
for _op in pickletools.opcodes:
    _TABLE[ord(_op.code)] = _OPS[_op.name]  # a KeyError here: a new opcode that the scan must learn first
    _NAME[ord(_op.code)] = _op.name
_UNPACK = {4: struct.Struct("<I").unpack_from, 8: struct.Struct("<Q").unpack_from}  # little-endian lengths
_SHIFT = 40  # a stack entry packs an object's depth above _SHIFT bits and its number below; 0 is an immutable leaf
_LOW = (1 << _SHIFT) - 1


def scan(data: bytes, lim: Limits) -> None:
    """Refuse, before anything is built, a pickle whose length fields overrun its bytes, whose memo indices do not
    increase or run ahead of the objects built, that builds more than max_items objects or nests deeper than
    max_depth. Depths are exact: an object may not grow once the pickle has referred to it again (no pickler writes
    that, short of a cycle). Malformed input ends in pickle.UnpicklingError, as the unpickler would."""
    table, unpack, size, max_items, max_depth = _TABLE, _UNPACK, len(data), lim.max_items, lim.max_depth
    one, deepest_allowed = 1 << _SHIFT, max_depth << _SHIFT
    stack: list[int] = []  # per stack item: depth << _SHIFT | object number (0 for strings, numbers and the like)
    push = stack.append
    marks: list[int] = []
    memo: dict[int, int] = {}  # memo index -> stack entry, for the objects that are not leaves
    memo_of: dict[int, int] = {}  # object number -> its memo index, to keep the memo's depth current
    shared: set[int] = set()  # object numbers the pickle referred to again (GET, DUP): they may no longer grow
    puts = next_key = built = i = 0  # the C unpickler's MEMOIZE stores at `puts` (its memo_len)

    def too_deep() -> PickleLimitError:
        return lim.refuse(f"nests containers more than {max_depth} deep (byte {i:,})", "max_depth")

    def grow(new: int) -> None:  # the top item now nests `new` deep
        old = stack[-1]
        if new > old >> _SHIFT:
            if new > max_depth:
                raise too_deep()
            if old & _LOW in shared:
                raise lim.refuse(f"changes an object at byte {i:,} after referring to it; it is a cycle or forged")
            stack[-1] = new << _SHIFT | (old & _LOW)
            if old & _LOW in memo_of:
                memo[memo_of[old & _LOW]] = stack[-1]

    def claim(n: int) -> int:  # the end of a counted argument whose length field is n bytes wide
        length = data[i + 1] if n == 1 else _UNPACK[n](data, i + 1)[0]
        if i + 1 + n + length > size:
            raise lim.refuse(
                f"is forged or truncated: a {_NAME[data[i]]} opcode at byte {i:,} claims {length:,} bytes but "
                f"{max(size - i - 1 - n, 0):,} remain (the unpickler would allocate the claim before reading)"
            )
        return i + 1 + n + length

    def bad_key(key: int) -> PickleLimitError:
        ahead = f"runs ahead of the {built:,} objects built (the unpickler would allocate memo for all below it)"
        return lim.refuse(f"is forged: memo index {key:,} before byte {i:,} {ahead if key >= next_key else 'repeats'}")

    def line() -> tuple[int, int]:  # a memo index written as a line, and where the next opcode is
        end = data.index(b"\n", i + 1)
        return int(data[i + 1 : end]), end + 1

    try:
        while True:
            kind, n = table[data[i]]
            if kind == _COUNTED:  # a string, bytes or long: most of a big pickle, with the memo put after each
                end = i + 1 + n + (data[i + 1] if n == 1 else unpack[n](data, i + 1)[0])
                i = end if end <= size else claim(n)
                push(0)
                built += 1
                if built > max_items:
                    raise lim.refuse(f"builds more than {max_items:,} objects (byte {i:,})", "max_items")
                op = data[i]
                if op == 0x94:  # MEMOIZE, BINPUT, LONG_BINPUT of a leaf: only the index is checked
                    key, i = puts, i + 1
                elif op == 0x71:
                    key, i = data[i + 1], i + 2
                elif op == 0x72:
                    key, i = unpack[4](data, i + 1)[0], i + 5
                else:
                    continue
                if key < next_key or key > built:
                    raise bad_key(key)
                next_key = key + 1
                puts += 1
            elif kind == _PUT:
                if n == 1:
                    key, i = data[i + 1], i + 2
                elif n == 4:
                    key, i = unpack[4](data, i + 1)[0], i + 5
                elif n == 0:
                    key, i = puts, i + 1
                else:
                    key, i = line()
                if key < next_key or key > built:
                    raise bad_key(key)
                next_key = key + 1
                puts += 1
                value = stack[-1]
                if value:
                    memo[key] = value
                    if value & _LOW in memo_of:
                        raise lim.refuse(f"is forged: byte {i:,} stores one object in the memo twice")
                    memo_of[value & _LOW] = key
            else:
                if kind == _LEAF or kind == _LINE or kind == _MUTABLE_BYTES:
                    if kind == _LEAF:
                        i += 1 + n
                    elif kind == _LINE:  # n lines: two for GLOBAL's module and name
                        i = data.index(b"\n", i + 1 if n == 1 else data.index(b"\n", i + 1) + 1) + 1
                    else:
                        i = claim(n)
                    built += 1
                    push(built if kind == _MUTABLE_BYTES else 0)  # a bytearray can grow: it gets a number
                elif kind == _GET:
                    key, i = (
                        (data[i + 1], i + 2) if n == 1 else (unpack[4](data, i + 1)[0], i + 5) if n == 4 else line()
                    )
                    value = memo.get(key, 0)  # 0 for a leaf, or an empty slot (where the unpickler stops)
                    if value:
                        shared.add(value & _LOW)
                    push(value)
                    built += 1
                elif kind == _ADD_MARK:
                    start = marks.pop()
                    if start < len(stack):
                        deepest = max(stack[start:])
                        del stack[start:]
                        grow((deepest >> _SHIFT) + 1)
                    i += 1
                elif kind == _MARK:
                    marks.append(len(stack))
                    built += 1
                    i += 1
                elif kind == _EMPTY:
                    built += 1
                    push(one | built)
                    i += 1
                elif kind in (_FROM_MARK, _INST, _TUPLE_N, _CALL):
                    if kind == _INST:
                        i = data.index(b"\n", data.index(b"\n", i + 1) + 1)
                    start = len(stack) - n if kind in (_TUPLE_N, _CALL) else marks.pop()
                    if start < 0:
                        raise IndexError("stack underflow")
                    deepest = max(stack[start:], default=0) & ~_LOW
                    del stack[start:]
                    deepest = max(deepest - one, 0) if kind == _CALL else deepest + one
                    if deepest > deepest_allowed:
                        raise too_deep()
                    built += 1
                    push(deepest | built)
                    i += 1
                elif kind == _ADD or kind == _BUILD:
                    deepest = max(stack[-n:]) >> _SHIFT
                    del stack[-n:]
                    grow(deepest + 1 if kind == _ADD else deepest - 1)
                    i += 1
                elif kind == _POP:
                    if marks and marks[-1] == len(stack):
                        marks.pop()
                    else:
                        stack.pop()
                    i += 1
                elif kind == _POP_MARK:
                    del stack[marks.pop() :]
                    i += 1
                elif kind == _DUP:
                    if stack[-1]:
                        shared.add(stack[-1] & _LOW)
                    push(stack[-1])
                    built += 1
                    i += 1
                elif kind == _SKIP or kind == _FRAME:
                    if kind == _FRAME:  # its length counts the opcodes that follow
                        claim(n)
                    i += 1 + n
                elif kind == _STOP:
                    return
                else:
                    raise pickle.UnpicklingError(
                        f"{lim.what} is not a pickle: opcode {data[i : i + 1]!r} at byte {i:,}"
                    )
                if built > max_items:
                    raise lim.refuse(f"builds more than {max_items:,} objects (byte {i:,})", "max_items")
    except (IndexError, ValueError, struct.error) as exc:
        raise pickle.UnpicklingError(f"{lim.what} is truncated or malformed at byte {i:,} ({exc})") from None
