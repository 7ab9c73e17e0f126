/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _IDGEN_NETLINK_H
#define _IDGEN_NETLINK_H

struct idgen_gen;

int idgen_netlink_init(struct idgen_gen *gen);
void idgen_netlink_uninit(void);

#endif /* _IDGEN_NETLINK_H */
