"""``fpconv_dtoa`` (deps/fpconv, used by ``d2string`` since Redis 7.2 and by Valkey): Grisu2 digits in
fpconv's layout. The digits are not always the shortest round-trip ones (Python's ``repr``): Grisu2
stops at a correct but sometimes longer or differently rounded digit string, and a zset listpack
stores exactly that text, so DUMP needs the same algorithm step by step (64-bit arithmetic included).

The cached powers of ten (10^k for k = -348, -340, …, 340 as a 64-bit significand and a binary
exponent, rounded to nearest) are computed here at import. O(1) per number.
"""

from __future__ import annotations

import struct
from fractions import Fraction
from typing import List, Tuple

_U64 = (1 << 64) - 1
_FRACMASK = 0x000FFFFFFFFFFFFF
_EXPMASK = 0x7FF0000000000000
_HIDDEN = 0x0010000000000000
_EXPBIAS = 1023 + 52
_FIRST_POWER, _STEP, _NPOWERS = -348, 8, 87
_EXPMIN, _EXPMAX = -60, -32
_ONE_LOG_TEN = 0.30102999566398114
_TENS = [10 ** (19 - i) for i in range(20)]  # 10^19 .. 10^0


def _cached_power(k: int) -> Tuple[int, int]:
    """``(frac, e)`` with 2^63 <= frac < 2^64 and frac * 2^e = 10^k rounded to nearest."""
    value = Fraction(10) ** k
    e = value.numerator.bit_length() - value.denominator.bit_length() - 64
    while value / Fraction(2) ** e >= 1 << 64:
        e += 1
    while value / Fraction(2) ** e < 1 << 63:
        e -= 1
    frac = int(value / Fraction(2) ** e + Fraction(1, 2))
    if frac == 1 << 64:
        frac, e = frac >> 1, e + 1
    return frac, e


_POWERS = [_cached_power(_FIRST_POWER + _STEP * i) for i in range(_NPOWERS)]


def _multiply(a: Tuple[int, int], b: Tuple[int, int]) -> Tuple[int, int]:
    """The upper 64 bits of a 64x64 product, rounded as fpconv does (``multiply``)."""
    lo = 0xFFFFFFFF
    ah_bl = (a[0] >> 32) * (b[0] & lo)
    al_bh = (a[0] & lo) * (b[0] >> 32)
    al_bl = (a[0] & lo) * (b[0] & lo)
    ah_bh = (a[0] >> 32) * (b[0] >> 32)
    tmp = (ah_bl & lo) + (al_bh & lo) + (al_bl >> 32) + (1 << 31)
    return (ah_bh + (ah_bl >> 32) + (al_bh >> 32) + (tmp >> 32)) & _U64, a[1] + b[1] + 64


def _find_cached_pow10(exp: int) -> Tuple[Tuple[int, int], int]:
    approx = int(-(exp + _NPOWERS) * _ONE_LOG_TEN)  # C: double truncated to int
    idx = int((approx - _FIRST_POWER) / _STEP)
    while True:
        current = exp + _POWERS[idx][1] + 64
        if current < _EXPMIN:
            idx += 1
        elif current > _EXPMAX:
            idx -= 1
        else:
            return _POWERS[idx], _FIRST_POWER + idx * _STEP


def _round_digit(digits: List[int], delta: int, rem: int, kappa: int, frac: int) -> None:
    while rem < frac and delta - rem >= kappa and (rem + kappa < frac or frac - rem > rem + kappa - frac):
        digits[-1] -= 1
        rem += kappa


def _grisu2(d: float) -> Tuple[List[int], int]:
    """The digits (as ints) and decimal exponent K of a positive finite ``d``: d ~ digits * 10^K."""
    bits = struct.unpack("<Q", struct.pack("<d", d))[0]
    frac, exp = bits & _FRACMASK, (bits & _EXPMASK) >> 52
    if exp:
        frac += _HIDDEN
        exp -= _EXPBIAS
    else:
        exp = -_EXPBIAS + 1
    # get_normalized_boundaries
    ufrac, uexp = (frac << 1) + 1, exp - 1
    while not ufrac & (_HIDDEN << 1):
        ufrac <<= 1
        uexp -= 1
    ufrac <<= 10
    uexp -= 10
    l_shift = 2 if frac == _HIDDEN else 1
    lfrac, lexp = (frac << l_shift) - 1, exp - l_shift
    lfrac <<= lexp - uexp
    # normalize
    while not frac & _HIDDEN:
        frac <<= 1
        exp -= 1
    frac <<= 11
    exp -= 11
    cp, k = _find_cached_pow10(uexp)
    w = _multiply((frac, exp), cp)
    upper = _multiply((ufrac, uexp), cp)
    lower = _multiply((lfrac, uexp), cp)
    lower = ((lower[0] + 1) & _U64, lower[1])
    upper = ((upper[0] - 1) & _U64, upper[1])
    return _generate_digits(w, upper, lower, -k)


def _generate_digits(fp: Tuple[int, int], upper: Tuple[int, int], lower: Tuple[int, int], K: int) -> Tuple[List[int], int]:
    wfrac = (upper[0] - fp[0]) & _U64
    delta = (upper[0] - lower[0]) & _U64
    shift = -upper[1]
    one = 1 << shift
    part1 = upper[0] >> shift
    part2 = upper[0] & (one - 1)
    digits: List[int] = []
    kappa = 10
    for div in _TENS[10:]:
        digit = part1 // div
        if digit or digits:
            digits.append(digit)
        part1 -= digit * div
        kappa -= 1
        tmp = (part1 << shift) + part2
        if tmp <= delta:
            _round_digit(digits, delta, tmp, (div << shift) & _U64, wfrac)
            return digits, K + kappa
    unit = 18
    while True:
        part2 = (part2 * 10) & _U64
        delta = (delta * 10) & _U64
        kappa -= 1
        digit = part2 >> shift
        if digit or digits:
            digits.append(digit)
        part2 &= one - 1
        if part2 < delta:
            _round_digit(digits, delta, part2, one, (wfrac * _TENS[unit]) & _U64)
            return digits, K + kappa
        unit -= 1


def _emit(digits: str, k: int, neg: bool) -> str:
    """``emit_digits``: plain integer, plain decimal, or d.ddde±x without leading exponent zeros."""
    nd = len(digits)
    exp = abs(k + nd - 1)
    if k >= 0 and exp < nd + 7:
        return digits + "0" * k
    if k < 0 and (k > -7 or exp < 4):
        offset = nd - abs(k)
        if offset <= 0:
            return "0." + "0" * -offset + digits
        return digits[:offset] + "." + digits[offset:]
    nd = min(nd, 18 - neg)
    out = digits[0] + ("." + digits[1:nd] if nd > 1 else "")
    out += "e" + ("-" if k + nd - 1 < 0 else "+")
    cent = 0
    if exp > 99:
        cent = exp // 100
        out += str(cent)
        exp -= cent * 100
    if exp > 9:
        out += str(exp // 10)
        exp %= 10
    elif cent:
        out += "0"
    return out + str(exp % 10)


def fpconv_dtoa(value: float) -> bytes:
    """The text ``fpconv_dtoa`` writes for a finite, non-zero ``value``."""
    neg = value < 0
    digits, k = _grisu2(abs(value))
    return (("-" if neg else "") + _emit("".join(map(str, digits)), k, neg)).encode()
