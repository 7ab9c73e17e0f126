#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# etcd_fill.py [--foreign-bytes N] ENDPOINT PREFIX REGION COUNT [FREE
# [FREE_UNTIL]]: writes the
# records w/0 .. w/COUNT-1 of a region fast, for the tests of a large
# region: through the JSON gateway, in txns of 128 puts (etcd's default
# --max-txn-ops), so 25,000 records take a couple hundred requests instead
# of 25,000 (one fsync each).
#
# Record w gets {"owner": "<a long host name>-<w>", "valid_until_ms": V}
# with V = 10**12 + w: held for years, and each value names its number, so
# a test can check that every record landed where it belongs.  A FREE
# number instead gets valid_until_ms FREE_UNTIL (default 1000): expired.
#
# With --foreign-bytes N every value is instead N bytes that are not a
# lease (another program's data), one put per request (etcd takes at most
# 1.5 MiB per request by default).
import base64
import json
import sys
import urllib.request

BATCH = 128
# A realistic fully qualified host name: the answer's size is what counts.
OWNER = "idgen-host-0123456789.rack-17.dc-west.example.internal"


def b64(s):
    return base64.b64encode(s.encode()).decode()


def value(w, free, free_until):
    until = free_until if w == free else 10**12 + w
    return json.dumps({"owner": f"{OWNER}-{w}", "valid_until_ms": until})


def main():
    args = sys.argv[1:]
    foreign = 0
    if args[:1] == ["--foreign-bytes"] and len(args) > 1:
        foreign = int(args[1])
        args = args[2:]
    if len(args) not in (4, 5, 6):
        sys.exit("usage: etcd_fill.py [--foreign-bytes N] ENDPOINT PREFIX "
                 "REGION COUNT [FREE [FREE_UNTIL]]")
    ep, prefix, region, count = args[:4]
    count = int(count)
    free = int(args[4]) if len(args) > 4 else -1
    free_until = int(args[5]) if len(args) > 5 else 1000
    batch = 1 if foreign else BATCH
    for lo in range(0, count, batch):
        ops = [{"request_put": {
            "key": b64(f"{prefix}/r{region}/w/{w}"),
            "value": b64("x" * foreign if foreign else
                         value(w, free, free_until))}}
            for w in range(lo, min(lo + batch, count))]
        req = urllib.request.Request(
            ep.rstrip("/") + "/v3/kv/txn",
            data=json.dumps({"success": ops}).encode(),
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            if not json.load(resp).get("succeeded"):
                sys.exit(f"etcd_fill.py: txn at w/{lo} did not succeed")


if __name__ == "__main__":
    main()
