-- What IMMUTABLE buys: idgen_min_id_at() of a constant is folded at plan
-- time, so a time range on the primary key is an index range scan with
-- constant bounds, and partitions bounded by idgen_min_id_at() are pruned
-- while planning.
SET timezone = 'UTC';

-- 60 days of orders from 2026-03-01, one a minute, on a few workers.
CREATE TABLE orders (id bigint PRIMARY KEY, customer integer NOT NULL);
INSERT INTO orders
SELECT idgen_min_id_at(timestamptz '2026-03-01 00:00:00+00' + g * interval '1 minute')
       | ((g % 8) << 12) | (g % 4096 / 64), g % 1000
  FROM generate_series(0, 60 * 1440 - 1) g;
ANALYZE orders;

-- Orders placed on 2026-03-15 (UTC): an Index Scan whose Index Cond holds
-- the two IDs as constants.
EXPLAIN (COSTS OFF)
SELECT * FROM orders
 WHERE id >= idgen_min_id_at('2026-03-15 00:00:00+00')
   AND id <  idgen_min_id_at('2026-03-16 00:00:00+00');
SELECT count(*), min(idgen_time(id)), max(idgen_time(id)) FROM orders
 WHERE id >= idgen_min_id_at('2026-03-15 00:00:00+00')
   AND id <  idgen_min_id_at('2026-03-16 00:00:00+00');
-- The same day at +02:00.
EXPLAIN (COSTS OFF)
SELECT * FROM orders
 WHERE id >= idgen_min_id_at('2026-03-15 00:00:00+02')
   AND id <  idgen_min_id_at('2026-03-16 00:00:00+02');
-- In a prepared statement's generic plan the bounds come at run time,
-- and the scan is still on the index.
PREPARE day_count(timestamptz) AS
SELECT count(*) FROM orders
 WHERE id >= idgen_min_id_at($1) AND id < idgen_min_id_at($1 + interval '1 day');
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE day_count('2026-03-15 00:00:00+00');
EXECUTE day_count('2026-03-15 00:00:00+00');
RESET plan_cache_mode;
