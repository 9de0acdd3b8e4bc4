"""algokit: small, dependable algorithm helpers."""

from algokit.rle import decode, decode_str, encode, encode_str

__all__ = ["decode", "decode_str", "encode", "encode_str"]
