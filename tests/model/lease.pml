/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lease.pml: idgen's lease protocol, for spin to check exhaustively.
 *
 * etcd (one record per worker number, written only by a txn comparing the
 * record's mod_revision), a transport that loses answers and requests and
 * delivers requests late or twice, NH idgend daemons (claim, renew,
 * release, adopt after a restart) that may be frozen for any time and
 * restarted with or without their state, two of them sharing one owner
 * name, a wall clock per host with bounded skew and steps, and the
 * generator each host runs (the module's fence and floor rules, F1-F3
 * and G2 of Documentation/design.md).
 *
 * The property: no two generators ever mint in the same (region, node,
 * ms).  tests/model/README.md says what is abstracted and why that is
 * sound; tests/model/run.sh runs the model and every mutant below.
 *
 * Mutants (spin -DMUTANT_...), each reverting one fix or rule; each must
 * make spin find a duplicate:
 *   NAME_ONLY         a record is ours when its owner name matches
 *                     (the per-instance token ignored)
 *   FLOOR_ZERO        a claim takes floor 0, not the previous valid_until
 *   PUSH_UNCONFIRMED  a renewal pushes its new fence before etcd confirmed it
 *   BLIND_RENEW       a renewal writes without comparing the mod_revision
 *   NO_FLOOR_WAIT     the generator mints at once after a push, without
 *                     first passing the floor (F2)
 *   NO_FENCE          the generator mints at or after valid_until (F1)
 *
 * Bounds and switches (spin -D...): T, LEASE, SKEW, LEAD, RESTARTS (the
 * sizes below); NO_LATE (the transport never delivers a request late),
 * NO_STEPS (no clock steps); DAEMON_NO_WAIT (the daemon pushes without
 * waiting for its clock to pass the floor).
 */

/* ---- sizes: small, so that every run is explored ---------------------- */

#ifndef NH
#define NH		3	/* hosts, each one idgend and one generator */
#endif
#define NW		2	/* worker numbers of the region */
#ifndef T
#define T		5	/* the true time runs 0..T ticks */
#endif
#ifndef LEASE
#define LEASE		2	/* how far a claim or renewal reaches */
#endif
#ifndef SKEW
#define SKEW		1	/* two wall clocks differ by at most SKEW */
#endif
#ifndef LEAD
#define LEAD		1	/* the generator stamps at most LEAD past its wall clock */
#endif
#ifndef RESTARTS
#define RESTARTS	2	/* restarts (any kind, any host) in one run */
#endif

#define NONE		255
#ifdef NO_LATE
#define NO_LATE_ 1
#else
#define NO_LATE_ 0
#endif

/* The owner names: hosts 0 and 1 were cloned from one image. */
#define NAME(h)		((h) == 2 -> 1 : 0)

/*
 * The token of host h's idgend instance i is h*(RESTARTS+1)+i+1; 0 is the
 * token of a record never written.  A generator (a host's module since its
 * boot) is numbered the same way, from boot[h].
 */
#define TOKEN(h)	((h) * (RESTARTS + 1) + inst[h] + 1)
#define TOKHOST(t)	(((t) - 1) / (RESTARTS + 1))
#define GEN(h)		((h) * (RESTARTS + 1) + boot[h] + 1)

/*
 * Wall clocks: host h reads now + off[h], off[h] in 0..SKEW, so any two
 * differ by at most SKEW.  A step moves off[h], back or forward.
 */
#define WALL(h)		(now + off[h])

/* ---- the world -------------------------------------------------------- */

byte now;
byte off[NH];
byte restarts;
byte inst[NH];			/* idgend instance: a fresh token each time */
byte boot[NH];			/* the generator's boot */

/*
 * etcd: the records of the region.  rrev is 0 for a record never written,
 * else 1: mod_revisions are renumbered (see apply_write()).
 */
byte rrev[NW];
byte rtok[NW];
byte rvu[NW];			/* valid_until */

/*
 * The revision each daemon holds (or read) of record dw[d]: 0 or 1 while
 * it is the record's current one, STALE once the record was written since.
 */
#define STALE		254
byte dw[NH];
byte drev[NH];

/*
 * The transport's one request in flight, delivered later (or never): a
 * request whose answer was lost, or a copy of one resent.
 */
bool lactive;
bool lcas;			/* a txn comparing lrev; false: a plain put */
byte lw;
byte lrev;
byte ltok;
byte lvu;

/*
 * The generator of each host: the lease in force (mw NONE: none) and
 * last, the highest ms the host stamped or fenced off (a floor, G2).
 */
byte mw[NH];
byte mvu[NH];
byte last[NH];

/*
 * The watched mint: one (number, ms) the search chose to follow (ww NONE
 * until then), and the generator that minted there.  Every other
 * generator minting there is a duplicate.  Following one mint per run
 * covers every pair of mints.
 */
byte ww = NONE;
byte wm;
byte wg;

/* ---- etcd and the transport ------------------------------------------ */

/*
 * mod_revision, renumbered: a CAS only ever asks whether a revision is
 * still the record's current one, and a record's revisions only grow, so
 * once written over a revision never matches again.  Every revision held
 * of a record becomes STALE when the record is written, and the record's
 * own revision stays 1: the same comparisons, in a finite state space.
 * A request in flight comparing the old revision can never apply: it is
 * forgotten.
 */
#define STALE_IF_HELD(d, w)						\
	if								\
	:: dw[d] == w && drev[d] == rrev[w] -> drev[d] = STALE		\
	:: else -> skip							\
	fi

inline forget_late()
{
	lactive = false; lcas = false; lw = 0; lrev = 0; ltok = 0; lvu = 0
}

inline apply_write(w, tok, val)
{
	STALE_IF_HELD(0, w);
	STALE_IF_HELD(1, w);
#if NH > 2
	STALE_IF_HELD(2, w);
#endif
	if
	:: lactive && lcas && lw == w -> forget_late()
	:: else -> skip
	fi;
	rrev[w] = 1; rtok[w] = tok; rvu[w] = val
}

/* etcd applies a txn: put {tok, val} if the revision is still exp (or a plain put). */
inline txn_apply(w, exp, tok, val, cas)
{
	if
	:: !cas || rrev[w] == exp -> apply_write(w, tok, val); applied = true
	:: else -> applied = false
	fi
}

/*
 * A daemon's write over the transport.  res: OK (nrev set), CANCEL (the
 * record as it is in crev, ctok, cvu) or UNKNOWN (the answer never came:
 * applied or not).  The transport may also keep a copy of the request,
 * delivered later by the environment.
 */
#define OK	0
#define CANCEL	1
#define UNKNOWN	2

inline etcd_txn(w, exp, val, cas)
{
	xrev = exp;	/* exp may name the revision held, which a write makes STALE */
	if
	:: skip;					/* answered */
		txn_apply(w, xrev, TOKEN(h), val, cas);
		if
		:: applied -> res = OK; nrev = rrev[w]
		:: else -> res = CANCEL; crev = rrev[w]; ctok = rtok[w]; cvu = rvu[w]
		fi
	:: skip;					/* its answer lost */
		txn_apply(w, xrev, TOKEN(h), val, cas);
		res = UNKNOWN
	:: res = UNKNOWN				/* the request lost */
	fi;
	applied = false;
	if
	:: !lactive && !NO_LATE_ ->		/* ... or kept, and delivered late */
		lactive = true; lcas = cas; lw = w; lrev = xrev;
		ltok = TOKEN(h); lvu = val;
		if
		:: cas && xrev != rrev[w] -> forget_late()	/* can never apply */
		:: else -> skip
		fi
	:: true -> skip
	fi;
	xrev = 0
}

/* ---- the generator (kmod/admin.c, kmod/mint.c, kmod/lease.c) --------- */

/* F2 and G2: the first ID of a lease is above its floor and above last. */
inline raise_floor(hh, fl)
{
#ifndef MUTANT_NO_FLOOR_WAIT
	if
	:: fl > last[hh] -> last[hh] = fl
	:: else -> skip
	fi
#else
	skip
#endif
}

/*
 * IDGEN_IOC_SET_LEASE: a renewal when the generator holds the same
 * number (the fence only moves forward, a higher floor lifts the next
 * ID), else a new lease, switched atomically (F3).
 */
inline gen_push(hh, w, fl, vu)
{
	if
	:: fl >= vu -> pushed_ok = false
	:: else ->
		if
		:: mw[hh] == w && vu < mvu[hh] -> pushed_ok = false
		:: else ->
			mw[hh] = w; mvu[hh] = vu; raise_floor(hh, fl);
			pushed_ok = true
		fi
	fi
}

/*
 * Minting.  The model follows one mint: the first one the search chooses
 * to watch (any generator holding number 0, at any ms it may stamp), and
 * then every mint at that same (number, ms), each of which must come from
 * the same generator.  The mints it does not follow change nothing but
 * last[h]; so last[h] is raised only by the watched mints, by a floor,
 * and by a revoke, which returns any L the unfollowed mints could have
 * left (README.md: why this covers every run of the generator).
 *
 * F1: below the fence (checked on the stamped ms).  G2: above every ms
 * the host used.  At most LEAD past the wall clock.  No lower bound: the
 * generator's clock may lag the wall clock by any amount (a forward step
 * not yet adopted, C4).  Number 0 only: the two numbers are symmetric.
 */
#ifdef MUTANT_NO_FENCE
#define BELOW_FENCE(hh, m)	true
#else
#define BELOW_FENCE(hh, m)	((m) < mvu[hh])
#endif
#define MAY_STAMP(hh, m)						\
	(mw[hh] != NONE && (m) > last[hh] && BELOW_FENCE(hh, m) &&	\
	 (m) <= WALL(hh) + LEAD)

#define WATCH(hh)							\
	atomic {							\
		ww == NONE && mw[hh] == 0 && MAY_STAMP(hh, last[hh] + 1) -> \
		wm = last[hh] + 1;					\
		do							\
		:: MAY_STAMP(hh, wm + 1) -> wm++			\
		:: break						\
		od;							\
		ww = 0; wg = GEN(hh); last[hh] = wm			\
	}

#define MINT_WATCHED(hh)						\
	atomic {							\
		ww != NONE && mw[hh] == ww && MAY_STAMP(hh, wm) ->	\
		last[hh] = wm;						\
		assert(wg == GEN(hh))					\
	}

/*
 * IDGEN_IOC_REVOKE: atomic against minting (F3).  Returns L, the host's
 * last ms: with a lease, anything from last[h] (nothing more minted) to
 * the most the lease let it stamp (below the fence, at most LEAD past
 * the latest wall clock).
 */
inline gen_revoke(hh)
{
	if
	:: mw[hh] != NONE ->
		do
		:: last[hh] + 1 < mvu[hh] && last[hh] + 1 <= now + SKEW + LEAD ->
			last[hh]++
		:: break
		od
	:: else -> skip
	fi;
	mw[hh] = NONE; mvu[hh] = 0;
	until = last[hh]
}

/* ---- idgend (helper/idgend/lease_protocol.c) -------------------------- */

/* is_ours(): the owner name, and the token of this instance. */
#ifdef MUTANT_NAME_ONLY
#define OURS(t)	((t) != 0 && NAME(TOKHOST(t)) == NAME(h))
#else
#define OURS(t)	((t) != 0 && NAME(TOKHOST(t)) == NAME(h) && (t) == TOKEN(h))
#endif

#ifdef MUTANT_BLIND_RENEW
#define RENEW_CAS	false
#else
#define RENEW_CAS	true
#endif

#ifdef MUTANT_FLOOR_ZERO
#define CLAIM_FLOOR(w)	0
#else
#define CLAIM_FLOOR(w)	rvu[w]		/* 0 for a record never written */
#endif

/*
 * The daemon's wait past the floor before the push.  DAEMON_NO_WAIT drops
 * it: the model still holds (the generator's F2 is what keeps IDs unique;
 * README.md).
 */
#ifdef DAEMON_NO_WAIT
#define PAST_FLOOR	true
#else
#define PAST_FLOOR	(WALL(h) > fl)
#endif

/* A record is free when its valid_until has passed by this host's clock. */
#define FREE(w)		(rrev[w] == 0 || rvu[w] <= WALL(h))

/* The number a daemon works on, and the revision it holds of it. */
#define W		dw[h]
#define REV		drev[h]

/* The daemon's steps: where it is in the protocol. */
#define START		0	/* (re)started: adopt what the generator holds */
#define IDLE		1	/* list and pick a free number */
#define CLAIM_READ	3	/* the claim's answer was lost: read it back */
#define WAIT		4	/* ours in etcd: wait past the floor, push */
#define HELD		6	/* renew, or release */
#define RENEW_READ	7	/* the renewal's answer was lost: read it back */
#define RENEW_PUSH	8	/* etcd confirmed the renewal: push it */
#define RENEW_CAS_STEP	9	/* the mutant pushed first; now it writes */

/* Forget everything but the step, so equal situations are equal states. */
inline reset()
{
	W = 0; REV = STALE; fl = 0; until = 0; conf = 0
}

/* Holding the lease: the claim's floor and the last renewal's value are spent. */
inline hold()
{
	fl = 0; until = 0;
	pc = HELD
}

/* Give back a claim never pushed: valid_until back to the floor. */
inline unclaim()
{
	etcd_txn(W, REV, fl, true);
	res = 0; nrev = 0; crev = 0; ctok = 0; cvu = 0;
	reset(); pc = IDLE
}

/* The lease is someone else's: revoke at once. */
inline lost()
{
	gen_revoke(h);
	reset();
	pc = IDLE
}

/*
 * A renewal's txn failed, or was read back as written by someone: the
 * record is (crev, ctok, cvu).  The fence the generator holds is mvu[h]
 * (the daemon's pushed_ms: only this daemon pushes to it).
 */
inline renew_refused()
{
	if
	:: !OURS(ctok) -> lost()
	:: else ->
		/* Ours at another revision: a write of ours, answer lost. */
		REV = crev;
		if
		:: cvu < mvu[h] -> lost()
		:: else ->
			conf = cvu;
			if
			:: cvu == until -> until = 0; pc = RENEW_PUSH
			:: else -> hold()
			fi
		fi
	fi
}

active [NH] proctype daemon()
{
	byte h = _pid;
	byte pc = START;
	byte fl, until, conf;		/* the claim's floor and fence; the fence etcd confirmed */
	byte nrev, xrev, res, crev, ctok, cvu;	/* within one step only */
	bool applied, pushed_ok;	/* within one step only */

	assert(h < NH);
	REV = STALE;
end:
	do
	/* Killed at any point, and started again. */
	:: atomic {
		restarts < RESTARTS -> restarts++;
		if
		:: skip		/* idgend restarts: its token (in /run) and the lease in the generator kept */
		:: inst[h]++; boot[h]++;	/* the host reboots: a fresh token, the generator holds nothing */
			mw[h] = NONE; mvu[h] = 0; last[h] = 0
		fi;
		reset();
		pc = START
	   }

	/* lease_adopt(): the generator's lease, if etcd still says it is ours. */
	:: atomic {
		pc == START ->
		if
		:: mw[h] == NONE -> pc = IDLE
		:: mw[h] != NONE && OURS(rtok[mw[h]]) && rvu[mw[h]] >= mvu[h] ->
			W = mw[h]; REV = rrev[W]; conf = rvu[W];
			hold()
		:: else -> lost()
		fi
	   }

	/*
	 * lease_claim(): list, pick a free number, write it by CAS on the
	 * revision listed, take the previous valid_until as floor.  One step:
	 * a write by someone else between the list and the CAS makes the CAS
	 * fail and leaves nothing behind (README.md).
	 */
	:: atomic {
		pc == IDLE && (FREE(0) || FREE(1)) ->
		if
		:: FREE(0) -> W = 0
		:: FREE(1) -> W = 1
		fi;
		REV = rrev[W];
		fl = CLAIM_FLOOR(W);
		until = WALL(h) + LEASE;
		etcd_txn(W, REV, until, true);
		if
		:: res == OK -> REV = nrev; pc = WAIT
		:: res == UNKNOWN -> pc = CLAIM_READ
		fi;
		res = 0; nrev = 0; crev = 0; ctok = 0; cvu = 0
	   }
	:: atomic {
		pc == CLAIM_READ ->
		if
		:: rrev[W] != REV && OURS(rtok[W]) && rvu[W] == until ->
			REV = rrev[W]; pc = WAIT
		:: else -> reset(); pc = IDLE
		:: true -> reset(); pc = IDLE		/* the read failed too */
		fi
	   }
	/* Wait until this host's clock has passed the floor, then push. */
	:: atomic {
		pc == WAIT && PAST_FLOOR ->
		gen_push(h, W, fl, until);
		if
		:: pushed_ok -> conf = until; hold()
		:: else -> unclaim()
		fi;
		pushed_ok = false
	   }
	/*
	 * Or give it back: the floor is too far ahead of this clock, or the
	 * clock lost its synchronisation (which the model does not follow:
	 * giving back is allowed at any time).
	 */
	:: atomic { pc == WAIT -> unclaim() }

	/* lease_renew(): valid_until forward on our revision; push what etcd confirmed. */
	:: atomic {
		pc == HELD ->
		until = WALL(h) + LEASE;
		if
		:: until < conf -> until = conf		/* never back */
		:: else -> skip
		fi;
#ifdef MUTANT_PUSH_UNCONFIRMED
		assert(mw[h] == W);
		gen_push(h, W, 0, until);
		pushed_ok = false;
		pc = RENEW_CAS_STEP
	   }
	:: atomic {
		pc == RENEW_CAS_STEP ->
#endif
		etcd_txn(W, REV, until, RENEW_CAS);
		if
		:: res == OK -> REV = nrev; conf = until; until = 0; pc = RENEW_PUSH
		:: res == CANCEL -> renew_refused()
		:: res == UNKNOWN -> pc = RENEW_READ
		fi;
		res = 0; nrev = 0; crev = 0; ctok = 0; cvu = 0
	   }
	:: atomic {
		pc == RENEW_READ ->
		if
		:: rrev[W] == REV -> hold()		/* not applied */
		:: rrev[W] != REV ->
			crev = rrev[W]; ctok = rtok[W]; cvu = rvu[W];
			renew_refused()
		:: true -> hold()			/* the read failed too */
		fi;
		crev = 0; ctok = 0; cvu = 0
	   }
	/* The renewal's push: a renewal of the lease the generator holds. */
	:: atomic {
		pc == RENEW_PUSH ->
		assert(mw[h] == W);	/* a renewal, which a floor 0 cannot lower */
		gen_push(h, W, 0, conf);
		pushed_ok = false;
		hold()
	   }

	/* lease_release(): revoke, then write the last ms back as valid_until. */
	:: atomic {
		pc == HELD ->
		gen_revoke(h);
		if
		:: until < conf ->
			etcd_txn(W, REV, until, true);
			res = 0; nrev = 0; crev = 0; ctok = 0; cvu = 0
		:: else -> skip	/* the host's last ms is at the fence: the record keeps it */
		fi;
		reset(); pc = IDLE
	   }
	od
}

/* ---- time, clocks, the transport's late deliveries, minting ----------- */

#define STEPS(hh)							\
	:: atomic { off[hh] < SKEW -> off[hh]++ }			\
	:: atomic { off[hh] > 0 -> off[hh]-- }

active proctype environment()
{
	bool applied, ecas;
	byte ew, erev, etok, evu;

end:
	do
	:: atomic { now < T -> now++ }
#ifndef NO_STEPS
	STEPS(0)
	STEPS(1)
#if NH > 2
	STEPS(2)
#endif
#endif
#ifndef NO_LATE
	:: atomic {
		lactive ->
		ecas = lcas; ew = lw; erev = lrev; etok = ltok; evu = lvu;
		forget_late();
		txn_apply(ew, erev, etok, evu, ecas);
		applied = false; ecas = false; ew = 0; erev = 0; etok = 0; evu = 0
	   }
#endif
	:: WATCH(0)
	:: WATCH(1)
#if NH > 2
	:: WATCH(2)
#endif
	:: MINT_WATCHED(0)
	:: MINT_WATCHED(1)
#if NH > 2
	:: MINT_WATCHED(2)
#endif
	od
}
