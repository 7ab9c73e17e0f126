/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The module's version: idgen's, VERSION at the top of the tree.  It is
 * stated here, beside the sources, so that every copy of kmod/ carries it
 * (DKMS's /usr/src/idgen-<version>/, a kernel tree's drivers/misc/idgen/);
 * tests/version.sh checks that it is VERSION's.
 */
#ifndef _IDGEN_VERSION_H
#define _IDGEN_VERSION_H

#define IDGEN_VERSION "0.1.1"

#endif /* _IDGEN_VERSION_H */
