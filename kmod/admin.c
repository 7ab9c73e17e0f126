// SPDX-License-Identifier: GPL-2.0
/*
 * Lease administration: set, renew and revoke the lease in force.
 *
 * Lease changes are rare and serialised by the generator's admin_lock.
 * A node switch or revoke closes the old lease's state word with one
 * exchange (lease.c) under switch_lock, and publishes the successor above
 * the last tick it returns; readers that meet the closed word wait on
 * switch_lock for the successor (mint.c).
 */
#include <linux/slab.h>
#include <uapi/linux/idgen.h>

#include "generator.h"

static int idgen_lease_args_check(struct idgen_gen *gen,
				  const struct idgen_lease_args *a,
				  struct idgen_bits *layout)
{
	if (a->pad || (a->flags & ~IDGEN_LEASE_FLAGS_ALL))
		return -EINVAL;

	if (!a->region_bits && !a->worker_bits && !a->seq_bits) {
		*layout = gen->layout;
	} else {
		layout->region_bits = a->region_bits;
		layout->worker_bits = a->worker_bits;
		layout->seq_bits = a->seq_bits;
		if (!idgen_bits_valid(layout))
			return -EINVAL;
	}

	if ((u64)a->region >> layout->region_bits ||
	    (u64)a->worker >> layout->worker_bits)
		return -EINVAL;
	if (a->floor_ms >= a->valid_until_ms ||
	    a->valid_until_ms > IDGEN_MS_MAX + 1)
		return -EINVAL;
	return 0;
}

/*
 * Why a lease whose first millisecond, @first_ms, lies at or past its fence
 * can never mint: the time field ends first, or the fence does.
 */
static int idgen_lease_never_mints(u64 first_ms)
{
	return first_ms > IDGEN_MS_MAX ? -EOVERFLOW : -EKEYEXPIRED;
}

/* Lift the state word above @floor_ms, unless it is there already. */
static void idgen_lease_raise(struct idgen_lease *lease, u64 floor_ms)
{
	u64 want = (floor_ms + 1) << lease->layout.seq_bits;
	u64 old = atomic64_read(&lease->next);

	do {
		if (old >= want)
			return;
	} while (!atomic64_try_cmpxchg(&lease->next, &old, want));
}

static void idgen_lease_fill(struct idgen_lease *lease,
			     const struct idgen_lease_args *a,
			     const struct idgen_bits *layout)
{
	lease->layout = *layout;
	lease->region = a->region;
	lease->worker = a->worker;
	lease->node_bits = idgen_node_bits(layout, a->region, a->worker);
	lease->floor = a->floor_ms;
	atomic64_set(&lease->valid_until, a->valid_until_ms);
	atomic64_set(&lease->fence_logged, 0);
	atomic64_set(&lease->near_sent, 0);
}

/*
 * Close @old (if any) and publish @new (NULL to revoke).  Readers that meet
 * the closed word wait on switch_lock, which is held until @new is visible.
 *
 * A @new lease whose first millisecond would already lie at or past its
 * fence could never mint: it is refused with -EKEYEXPIRED (-EOVERFLOW past
 * the end of the time field) and @old is reopened, untouched, as if the
 * call had not been made.  The first millisecond is only known once @old
 * is closed, since readers move it up until then.
 */
static int idgen_gen_switch(struct idgen_gen *gen, struct idgen_lease *old,
			    struct idgen_lease *new)
{
	u64 last_ms = gen->last_ms;
	u64 next = 0, start_ms;

	lockdep_assert_held(&gen->admin_lock);

	spin_lock(&gen->switch_lock);
	if (old) {
		next = idgen_lease_close(old);
		last_ms = max(last_ms,
			      idgen_lease_last_ms(next, old->layout.seq_bits));
	}
	if (new) {
		/* G2: above the floor and above every ms this host used. */
		start_ms = max(last_ms, new->floor) + 1;
		if (start_ms >= (u64)atomic64_read(&new->valid_until)) {
			if (old)
				idgen_lease_reopen(old, next);
			spin_unlock(&gen->switch_lock);
			return idgen_lease_never_mints(start_ms);
		}
		atomic64_set(&new->next, start_ms << new->layout.seq_bits);
		WRITE_ONCE(new->start_ms, start_ms);
		last_ms = start_ms - 1;
	}
	gen->last_ms = last_ms;
	rcu_assign_pointer(gen->lease, new);
	spin_unlock(&gen->switch_lock);

	if (old)
		kfree_rcu(old, rcu);
	return 0;
}

/**
 * idgen_gen_set_lease() - set or renew the lease
 * @gen:  the generator.
 * @args: the lease, from user space.
 *
 * Context: process context; takes admin_lock.
 * Return: 0, -EINVAL for bad arguments, -EKEYEXPIRED for a lease that could
 * never mint (-EOVERFLOW when the time field ends before its first
 * millisecond), -ENOMEM; nothing changed on an error.
 */
int idgen_gen_set_lease(struct idgen_gen *gen,
			const struct idgen_lease_args *args)
{
	struct idgen_event_info ev = {};
	struct idgen_lease *old, *new;
	struct idgen_bits layout;
	u64 now_ms;
	int err;

	err = idgen_lease_args_check(gen, args, &layout);
	if (err)
		return err;
	/*
	 * Nor could one whose fence the trusted clock has passed: no ID is
	 * stamped before now.
	 */
	now_ms = idgen_gen_now_ms(gen, false);
	if (args->valid_until_ms <= now_ms)
		return idgen_lease_never_mints(now_ms);

	new = kzalloc(sizeof(*new), GFP_KERNEL);
	if (!new)
		return -ENOMEM;

	mutex_lock(&gen->admin_lock);
	old = rcu_dereference_protected(gen->lease,
					lockdep_is_held(&gen->admin_lock));

	if (old && old->region == args->region && old->worker == args->worker &&
	    idgen_bits_equal(&old->layout, &layout)) {
		u8 s = layout.seq_bits;
		u64 next_ms;

		/* Renewal: the fence never moves back. */
		if (args->valid_until_ms < (u64)atomic64_read(&old->valid_until)) {
			err = -EINVAL;
			goto out_unlock;
		}
		/*
		 * Nor is it taken when it would leave nothing to mint: the
		 * next ID, lifted above the floor, at or past the fence.
		 */
		next_ms = idgen_tick_ms(max_t(u64, atomic64_read(&old->next),
					      (args->floor_ms + 1) << s), s);
		if (next_ms >= args->valid_until_ms) {
			err = idgen_lease_never_mints(next_ms);
			goto out_unlock;
		}
		if (args->flags & IDGEN_LEASE_CLOCK_SYNCED)
			idgen_clock_read(&gen->clock, true, NULL);
		if (args->floor_ms > old->floor) {
			idgen_lease_raise(old, args->floor_ms);
			old->floor = args->floor_ms;
			WRITE_ONCE(old->start_ms,
				   max(old->start_ms, args->floor_ms + 1));
		}
		/* The events are owed afresh for the new fence (fence_logged). */
		atomic64_set(&old->valid_until, args->valid_until_ms);
		ev.type = IDGEN_EVENT_LEASE_RENEWED;
		/* The lease's floor, which a lower one in the request left be. */
		ev.floor_ms = old->floor;
		pr_debug("lease r%u/w%u renewed until ms %llu\n", args->region,
			 args->worker, args->valid_until_ms);
		goto out_event;
	}

	idgen_lease_fill(new, args, &layout);
	err = idgen_gen_switch(gen, old, new);
	if (err) {
		/*
		 * The old lease was closed for a moment and is open again:
		 * wake pollers as a lease change would, so none sleeps on
		 * what it saw meanwhile.
		 */
		if (old)
			wake_up_interruptible(&gen->wait);
		goto out_unlock;
	}
	if (args->flags & IDGEN_LEASE_CLOCK_SYNCED)
		idgen_clock_read(&gen->clock, true, NULL);
	pr_info("lease r%u/w%u (layout %u/%u/%u) set: ms %llu to %llu, first ms %llu\n",
		args->region, args->worker, layout.region_bits,
		layout.worker_bits, layout.seq_bits, args->floor_ms,
		args->valid_until_ms, gen->last_ms + 1);
	new = NULL;
	ev.type = IDGEN_EVENT_LEASE_SET;
	ev.floor_ms = args->floor_ms;

out_event:
	ev.has_node = true;
	ev.has_floor = true;
	ev.region = args->region;
	ev.worker = args->worker;
	ev.valid_until_ms = args->valid_until_ms;
	/* Under admin_lock: events leave in the order the changes were made. */
	idgen_gen_event(gen, &ev);

out_unlock:
	mutex_unlock(&gen->admin_lock);
	kfree(new);
	if (err)
		return err;
	wake_up_interruptible(&gen->wait);
	return 0;
}

/**
 * idgen_gen_revoke() - end the lease in force
 * @gen: the generator.
 *
 * Context: process context; takes admin_lock.
 * Return: L, the highest ms stamped or fenced off: no ID of the revoked
 * lease carries a later one, including IDs of reads in flight.
 */
u64 idgen_gen_revoke(struct idgen_gen *gen)
{
	struct idgen_event_info ev = {};
	struct idgen_lease *old;
	u64 last;

	mutex_lock(&gen->admin_lock);
	old = rcu_dereference_protected(gen->lease,
					lockdep_is_held(&gen->admin_lock));
	last = gen->last_ms;
	if (old) {
		idgen_event_node(&ev, IDGEN_EVENT_LEASE_REVOKED, old);
		idgen_gen_switch(gen, old, NULL);
		last = gen->last_ms;
		pr_info("lease r%u/w%u revoked: last ms %llu\n", ev.region,
			ev.worker, last);
		ev.has_last = true;
		ev.last_ms = last;
		/* Under admin_lock, in order with the other lease events. */
		idgen_gen_event(gen, &ev);
	}
	mutex_unlock(&gen->admin_lock);

	wake_up_interruptible(&gen->wait);
	return last;
}
