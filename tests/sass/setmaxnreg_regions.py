#!/usr/bin/env python3
"""Registers used after each setmaxnreg of one kernel's SASS, against the count it sets.

A warpgroup that lowers its registers with setmaxnreg.dec (USETMAXREG.DEALLOC N) or raises them
with setmaxnreg.inc (USETMAXREG.TRY_ALLOC N) must then run code that uses registers R0 .. R(N-1)
only. This walks the control flow from each such instruction (fall-through, branch and call
targets, up to an unconditional branch, EXIT or RET) and reports the highest register the
reachable instructions name.

usage: setmaxnreg_regions.py FILE.sass
Prints one line per setmaxnreg: "<address> <DEALLOC|TRY_ALLOC> <count>: R0-R<max> in <n>
instructions". Exit: 0 every region within its count, 1 a region past it, 2 no setmaxnreg.
"""
import re
import sys

INSTRUCTION = re.compile(r"^\s*/\*([0-9a-f]+)\*/\s+(.*?)\s*;")
SETMAXNREG = re.compile(r"USETMAXREG\.(DEALLOC|TRY_ALLOC)\.CTAPOOL\s+(?:U?P\d+,\s*)?0x([0-9a-f]+)")
REGISTER = re.compile(r"\bR(\d+)\b")


def read(path):
    """The kernel's instructions: address -> text, and the addresses in order."""
    code, order = {}, []
    with open(path) as sass:
        for line in sass:
            match = INSTRUCTION.match(line)
            if match:
                address = int(match.group(1), 16)
                code[address] = match.group(2)
                order.append(address)
    return code, order


def opcode(text):
    words = text.split()
    return words[1] if words[0].startswith("@") else words[0]


def reachable(code, order, start):
    following = dict(zip(order, order[1:]))
    seen, stack = set(), [start]
    while stack:
        address = stack.pop()
        if address in seen or address not in code:
            continue
        seen.add(address)
        text = code[address]
        op = opcode(text)
        predicated = text.startswith("@")
        if op.startswith(("BRA", "BRX", "CALL")):
            stack.extend(int(target, 16) for target in re.findall(r"0x([0-9a-f]+)", text))
        if not predicated and (op.startswith(("EXIT", "RET")) or op.startswith("BRA")):
            continue
        if address in following:
            stack.append(following[address])
    return seen


def main():
    if len(sys.argv) != 2:
        print(next(line for line in __doc__.splitlines() if line.startswith("usage:")), file=sys.stderr)
        return 2
    code, order = read(sys.argv[1])
    regions = [(a, SETMAXNREG.search(code[a])) for a in order if "USETMAXREG" in code[a]]
    regions = [(a, m) for a, m in regions if m]
    if not regions:
        print("no setmaxnreg")
        return 2
    status = 0
    for address, match in regions:
        kind, count = match.group(1), int(match.group(2), 16)
        region = reachable(code, order, address)
        highest = max((int(r) for a in region for r in REGISTER.findall(code[a])), default=-1)
        print(f"{address:#x} {kind} {count}: R0-R{highest} in {len(region)} instructions")
        if highest >= count:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
