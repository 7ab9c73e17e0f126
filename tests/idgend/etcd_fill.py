#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# etcd_fill.py ENDPOINT PREFIX REGION COUNT [FREE [FREE_UNTIL]]: writes the
# records w/0 .. w/COUNT-1 of a region fast, for the tests of a large
# region: through the JSON gateway, in txns of 128 puts (etcd's default
# --max-txn-ops), so 25,000 records take a couple hundred requests instead
# of 25,000 (one fsync each).
#
# Record w gets {"owner": "<a long host name>-<w>", "valid_until_ms": V}
# with V = 10**12 + w: held for years, and each value names its number, so
# a test can check that every record landed where it belongs.  A FREE
# number instead gets valid_until_ms FREE_UNTIL (default 1000): expired.
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
    if len(sys.argv) not in (5, 6, 7):
        sys.exit("usage: etcd_fill.py ENDPOINT PREFIX REGION COUNT "
                 "[FREE [FREE_UNTIL]]")
    ep, prefix, region, count = sys.argv[1:5]
    count = int(count)
    free = int(sys.argv[5]) if len(sys.argv) > 5 else -1
    free_until = int(sys.argv[6]) if len(sys.argv) > 6 else 1000
    for lo in range(0, count, BATCH):
        ops = [{"request_put": {
            "key": b64(f"{prefix}/r{region}/w/{w}"),
            "value": b64(value(w, free, free_until))}}
            for w in range(lo, min(lo + BATCH, count))]
        req = urllib.request.Request(
            ep.rstrip("/") + "/v3/kv/txn",
            data=json.dumps({"success": ops}).encode(),
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            if not json.load(resp).get("succeeded"):
                sys.exit(f"etcd_fill.py: txn at w/{lo} did not succeed")


if __name__ == "__main__":
    main()
