# SPDX-License-Identifier: GPL-2.0
#
# make                 build kmod/idgen.ko against KDIR
# make KDIR=<tree>     ... against another kernel tree or headers
# make W=1 / C=2       kbuild's extra warnings / sparse on every file
# make style           checkpatch --strict and kernel-doc -Wall over the
#                      kernel sources
# make sparse          sparse over the module (C=2)
# make check           every test, in QEMU guests (see README.md)
# make intree          kmod/ as drivers/misc/idgen in Debian's kernel source:
#                      built with CONFIG_IDGEN=m and =y, and kunit.py run
#                      --kunitconfig=drivers/misc/idgen on UML
#                      (scripts/build/intree.sh)
# make matrix          the same on every kernel of the matrix (see README.md)
# make demo            mint and decode IDs from a real /dev/idgen in a guest
# make bench           benchmarks in a guest, in time and in instructions (a
#                      QEMU plugin, bench/icount/), then bench-http,
#                      bench-grpc, bench-tls, bench-client and bench-pg;
#                      results in Documentation/bench/
# make bench-http      idgen-httpd's HTTP benchmark on the host only
# make bench-grpc      idgen-httpd's gRPC benchmark on the host only (h2load)
# make bench-tls       idgen-httpd over TLS (HTTPS, gRPC, handshakes, the
#                      client over https) beside nginx, on the host only
# make bench-client    libidgen-client's benchmark on the host only
# make bench-pg        what IDs do to a PostgreSQL primary key, on the host only
# make fuzz            10^6 fuzzed calls and trinity against the module in a
#                      6.12 guest (scripts/test/fuzz.sh; FUZZ_SEED=S picks a seed)

KDIR ?= /lib/modules/$(shell uname -r)/build

KERNEL_SOURCES := $(filter-out %.mod.c,$(wildcard kmod/*.c kmod/*.h)) include/uapi/linux/idgen.h $(wildcard tests/kunit/*.c)

all: modules

modules clean:
	@test -d "$(KDIR)" || { echo "no kernel tree at KDIR=$(KDIR): install the headers (linux-headers-amd64) or pass KDIR=" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) $@

sparse:
	$(MAKE) -C $(KDIR) M=$(CURDIR) C=2 CF="-D__CHECK_ENDIAN__" W=1 modules

style:
	scripts/lint/checkpatch.sh $(KERNEL_SOURCES) kmod/Kconfig
	scripts/lint/kernel-doc.sh $(filter-out tests/%,$(KERNEL_SOURCES))

check:
	scripts/check.sh

intree:
	scripts/build/intree.sh

# check, with every kernel of the matrix, also those CI leaves out.
matrix:
	scripts/check.sh --matrix

demo:
	scripts/demo.sh

bench:
	scripts/bench/bench.sh

fuzz:
	scripts/test/fuzz.sh --seed $(or $(FUZZ_SEED),1)

bench-http:
	scripts/bench/bench-http.sh

bench-grpc:
	scripts/bench/bench-grpc.sh

bench-tls:
	scripts/bench/bench-tls.sh

bench-client:
	scripts/bench/bench-client.sh

bench-pg:
	scripts/bench/bench-pg.sh

.PHONY: all modules clean sparse style check intree matrix demo bench bench-http bench-grpc bench-tls bench-client bench-pg fuzz
