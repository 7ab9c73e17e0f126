-- README.md's recipes, statement for statement: tests/pg/run.sh checks
-- that every ```sql block of README.md is here word for word.
SET timezone = 'UTC';

-- Recipe 1: the orders placed on a given day, a range scan on the primary key.
CREATE TABLE shop_orders (
    id       bigint PRIMARY KEY DEFAULT idgen_next(),
    customer bigint NOT NULL,
    total    numeric(12,2) NOT NULL
);
-- (On the test host there is no device: these rows get IDs made for known times.)
INSERT INTO shop_orders (id, customer, total)
SELECT idgen_min_id_at(timestamptz '2026-03-14 22:00:00+00' + g * interval '1 hour') + g, g, g * 1.5
  FROM generate_series(0, 29) g;
SELECT id, idgen_time(id) AS placed_at, customer, total
  FROM shop_orders
 WHERE id >= idgen_min_id_at('2026-03-15 00:00:00+00')
   AND id <  idgen_min_id_at('2026-03-16 00:00:00+00')
 ORDER BY id;

-- Recipe 2: one partition per month, and an old month dropped.
CREATE TABLE events (
    id      bigint NOT NULL,
    kind    text   NOT NULL,
    PRIMARY KEY (id)
) PARTITION BY RANGE (id);
CREATE TABLE events_2026_01 PARTITION OF events
    FOR VALUES FROM (idgen_min_id_at('2026-01-01 00:00:00+00'))
                 TO (idgen_min_id_at('2026-02-01 00:00:00+00'));
CREATE TABLE events_2026_02 PARTITION OF events
    FOR VALUES FROM (idgen_min_id_at('2026-02-01 00:00:00+00'))
                 TO (idgen_min_id_at('2026-03-01 00:00:00+00'));
CREATE TABLE events_2026_03 PARTITION OF events
    FOR VALUES FROM (idgen_min_id_at('2026-03-01 00:00:00+00'))
                 TO (idgen_min_id_at('2026-04-01 00:00:00+00'));
INSERT INTO events
SELECT idgen_min_id_at(timestamptz '2026-01-01 00:00:00+00' + g * interval '1 day'), 'tick'
  FROM generate_series(0, 89) g;
ANALYZE events;
SELECT tableoid::regclass AS partition, count(*), min(idgen_time(id)), max(idgen_time(id))
  FROM events GROUP BY 1 ORDER BY 1;
-- A day's events: the planner keeps only March's partition.
EXPLAIN (COSTS OFF)
SELECT * FROM events
 WHERE id >= idgen_min_id_at('2026-03-15 00:00:00+00')
   AND id <  idgen_min_id_at('2026-03-16 00:00:00+00');
-- Retention: January goes as a whole table, no DELETE, no vacuum.
ALTER TABLE events DETACH PARTITION events_2026_01;
DROP TABLE events_2026_01;
SELECT count(*), min(idgen_time(id)) FROM events;

-- Recipe 3: a real created_at where business time differs from minting time.
CREATE TABLE payments (
    id         bigint PRIMARY KEY DEFAULT idgen_next(),  -- when the row was written
    paid_at    timestamptz NOT NULL,                     -- when the customer paid
    amount     numeric(12,2) NOT NULL
);
CREATE INDEX payments_paid_at ON payments (paid_at);
-- A card terminal that was offline uploads on 2026-03-15 what was paid on the 10th.
INSERT INTO payments (id, paid_at, amount)
VALUES (idgen_min_id_at('2026-03-15 09:00:00+00') + 1, '2026-03-10 17:45:00+00', 12.50),
       (idgen_min_id_at('2026-03-15 09:00:00+00') + 2, '2026-03-15 08:59:30+00', 99.00);
-- Payments of 2026-03-10, by business time: paid_at, not the ID.
SELECT amount, paid_at, idgen_time(id) AS written_at
  FROM payments
 WHERE paid_at >= '2026-03-10 00:00:00+00' AND paid_at < '2026-03-11 00:00:00+00';

-- Recipe 4: for range-partitioned stores (Spanner, CockroachDB, HBase) a
-- hash prefix, never id % N.
CREATE TABLE store_orders (
    shard smallint GENERATED ALWAYS AS ((hashint8(id) & 15)::smallint) STORED,
    id    bigint NOT NULL,
    PRIMARY KEY (shard, id)
);
-- 1000 IDs of a quiet host: one ID a millisecond, so each is sequence 0.
INSERT INTO store_orders (id)
SELECT idgen_min_id_at(timestamptz '2026-03-15 00:00:00+00' + g * interval '1 millisecond')
       | (1 << 19) | (37 << 12)
  FROM generate_series(0, 999) g;
-- id % 16 reads the sequence's low bits: every row lands in one shard.
SELECT (SELECT count(DISTINCT id % 16) FROM store_orders) AS modulo_shards,
       (SELECT count(DISTINCT shard) FROM store_orders) AS hash_shards,
       (SELECT max(n) FROM (SELECT count(*) AS n FROM store_orders GROUP BY shard) s) AS busiest_shard;
