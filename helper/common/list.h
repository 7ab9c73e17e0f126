/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A doubly linked list whose nodes live in the structs they link, as the
 * kernel's <linux/list.h> has it: a list is a head node, empty when it
 * points to itself, so adding and removing never test for an end.
 */
#ifndef COMMON_LIST_H
#define COMMON_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct list_node {
	struct list_node *prev, *next;
};

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#define list_entry(node, type, member)	container_of(node, type, member)

static inline void list_init(struct list_node *head)
{
	head->prev = head;
	head->next = head;
}

static inline bool list_empty(const struct list_node *head)
{
	return head->next == head;
}

static inline void list_insert(struct list_node *n, struct list_node *prev,
			       struct list_node *next)
{
	n->prev = prev;
	n->next = next;
	prev->next = n;
	next->prev = n;
}

/* n first in head's list. */
static inline void list_add(struct list_node *head, struct list_node *n)
{
	list_insert(n, head, head->next);
}

/* n last in head's list. */
static inline void list_add_tail(struct list_node *head, struct list_node *n)
{
	list_insert(n, head->prev, head);
}

/* n out of its list, and a list of its own (so a second del is harmless). */
static inline void list_del(struct list_node *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	list_init(n);
}

/* Every node of from moved to the end of to; from left empty. */
static inline void list_splice_tail(struct list_node *to, struct list_node *from)
{
	if (list_empty(from))
		return;
	from->next->prev = to->prev;
	to->prev->next = from->next;
	from->prev->next = to;
	to->prev = from->prev;
	list_init(from);
}

/* pos over each entry of head; pos may be removed (tmp holds the next). */
#define list_for_each_entry_safe(pos, tmp, head, member)			\
	for (pos = list_entry((head)->next, __typeof__(*pos), member),		\
	     tmp = list_entry(pos->member.next, __typeof__(*pos), member);	\
	     &pos->member != (head);						\
	     pos = tmp, tmp = list_entry(tmp->member.next, __typeof__(*pos), member))

#define list_for_each_entry(pos, head, member)					\
	for (pos = list_entry((head)->next, __typeof__(*pos), member);		\
	     &pos->member != (head);						\
	     pos = list_entry(pos->member.next, __typeof__(*pos), member))

#define list_first_entry(head, type, member) list_entry((head)->next, type, member)

#endif /* COMMON_LIST_H */
