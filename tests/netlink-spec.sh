#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# netlink-spec.sh: Documentation/netlink/specs/idgen.yaml against the
# kernel's genetlink-c schema, and against the uapi header: every enum and
# attribute the spec names exists in include/uapi/linux/idgen.h with the
# same value.  Prints TAP.  Debian's python3 (python3-yaml,
# python3-jsonschema) runs it, whatever python3 comes first on PATH.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
ynl=$("$top/scripts/test/ynl.sh") || exit 1
spec=$top/Documentation/netlink/specs/idgen.yaml

echo "TAP version 13"
if /usr/bin/python3 - "$ynl/Documentation/netlink/genetlink-c.yaml" "$spec" <<'PY'
import sys, yaml, jsonschema
schema = yaml.safe_load(open(sys.argv[1]))
jsonschema.validate(yaml.safe_load(open(sys.argv[2])), schema)
PY
then echo "ok 1 idgen.yaml validates against genetlink-c.yaml"
else echo "not ok 1 idgen.yaml validates against genetlink-c.yaml"; exit 1
fi

# The header's values, as the compiler sees them, against the spec's.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 - "$spec" >"$tmp/check.c" <<'PY'
import sys, yaml
spec = yaml.safe_load(open(sys.argv[1]))
print('#include <stdio.h>\n#include <linux/idgen.h>\nint main(void)\n{\n\tint bad = 0;')
def check(name, value):
    c = name.upper().replace('-', '_')
    print(f'\tif ({c} != {value}) {{ printf("# {c} is %d, the spec says {value}\\n", (int){c}); bad = 1; }}')
for d in spec['definitions']:
    if d['type'] == 'const':
        check(d.get('name-prefix', 'idgen-') + d['name'], d['value'])
        continue
    start = d.get('value-start', 0)
    for i, e in enumerate(d['entries']):
        v = start + i if d['type'] == 'enum' else 1 << i
        check(d['name-prefix'] + e, v)
for aset in spec['attribute-sets']:
    v = 0
    for a in aset['attributes']:
        v = a.get('value', v + 1)
        check(aset['name-prefix'] + a['name'], v)
ops = spec['operations']
for i, op in enumerate(ops['list']):
    check(ops['name-prefix'] + op['name'], i + 1)
print('\treturn bad;\n}')
PY
if gcc -I"$top/include/uapi" -o "$tmp/check" "$tmp/check.c" && "$tmp/check"; then
	echo "ok 2 every enum, attribute and command of the spec matches the uapi header"
else
	echo "not ok 2 every enum, attribute and command of the spec matches the uapi header"
	exit 1
fi
