/* list: kin's one intrusive doubly linked list. A struct that sits in a
 * list embeds a struct list_node; the list itself is a list_node used as
 * its head (circular, so insert and remove are O(1) and need no head).
 * Included by lib/lib.h.
 *
 *	struct conn { struct list_node node; ... };
 *	struct list_node conns = LIST_HEAD_INIT(conns);   (or list_init)
 *	list_push(&conns, &c->node);
 *	list_for_each_safe(c, tmp, &conns, node) { list_remove(&c->node); free(c); }
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct list_node {
	struct list_node *prev, *next;
};

#define LIST_HEAD_INIT(name)                                                                       \
	{                                                                                          \
		&(name), &(name)                                                                   \
	}

#define container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))
#define list_entry(ptr, type, member)   container_of(ptr, type, member)

static inline void list_init(struct list_node *head)
{
	head->prev = head->next = head;
}

static inline bool list_is_empty(const struct list_node *head)
{
	return head->next == head;
}

/* True while n is in a list (list_remove leaves it unlinked). */
static inline bool list_is_linked(const struct list_node *n)
{
	return n->next && n->next != n;
}

static inline void list_insert_between_(struct list_node *n, struct list_node *prev,
                                        struct list_node *next)
{
	n->prev = prev;
	n->next = next;
	prev->next = n;
	next->prev = n;
}

/* At the front: newest first. */
static inline void list_push(struct list_node *head, struct list_node *n)
{
	list_insert_between_(n, head, head->next);
}

/* At the back: oldest first. */
static inline void list_append(struct list_node *head, struct list_node *n)
{
	list_insert_between_(n, head->prev, head);
}

/* Unlinks n (a node not in a list is fine) and leaves it unlinked. */
static inline void list_remove(struct list_node *n)
{
	if (n->next && n->prev) {
		n->prev->next = n->next;
		n->next->prev = n->prev;
	}
	n->prev = n->next = n;
}

static inline size_t list_count(const struct list_node *head)
{
	size_t n = 0;
	for (const struct list_node *p = head->next; p != head; p = p->next)
		n++;
	return n;
}

#define list_first_entry(head, type, member)                                                       \
	(list_is_empty(head) ? NULL : list_entry((head)->next, type, member))

#define list_for_each(pos, head, member)                                                           \
	for (pos = list_entry((head)->next, __typeof__(*pos), member); &pos->member != (head);     \
	     pos = list_entry(pos->member.next, __typeof__(*pos), member))

/* Oldest first, where nodes were pushed (newest first). */
#define list_for_each_reverse(pos, head, member)                                                   \
	for (pos = list_entry((head)->prev, __typeof__(*pos), member); &pos->member != (head);     \
	     pos = list_entry(pos->member.prev, __typeof__(*pos), member))

/* The same as list_for_each, and pos may be removed (and freed) in the body. */
#define list_for_each_safe(pos, tmp, head, member)                                                 \
	for (pos = list_entry((head)->next, __typeof__(*pos), member),                             \
	    tmp = list_entry(pos->member.next, __typeof__(*pos), member);                          \
	     &pos->member != (head);                                                               \
	     pos = tmp, tmp = list_entry(tmp->member.next, __typeof__(*pos), member))
