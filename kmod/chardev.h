/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _IDGEN_CHARDEV_H
#define _IDGEN_CHARDEV_H

struct idgen_gen;

int idgen_chardev_init(struct idgen_gen *gen);
void idgen_chardev_uninit(void);

#endif /* _IDGEN_CHARDEV_H */
