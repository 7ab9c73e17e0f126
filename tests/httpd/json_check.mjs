// SPDX-License-Identifier: GPL-2.0
//
// node json_check.mjs BASE_URL WORKER ERRORS.txt
// node json_check.mjs --public BASE_URL WORKER
//
// idgen-httpd's answers as a JavaScript client reads them: plain JSON.parse,
// IDs kept as strings and checked with BigInt, every ID round-tripping exactly
// (Documentation/design.md section 9).  BASE_URL is a running service on
// --device sim:WORKER.  ERRORS.txt holds lines "STATUS CODE FILE": an error
// answer saved by run.sh, which must parse as
// {"error":{"code":CODE,"message":"..."}}.  With --public, the service has a
// public-ID key (Documentation/design.md section 10): POST {"public": true}
// answers a "public" array of strings beside "ids", and each decodes through
// GET /v1/public/{pub} to its ID's own answer.  Prints TAP.
import { readFileSync } from 'node:fs';

const EPOCH = 1767225600000n;
const ID_MAX = (1n << 63n) - 1n;
const CANONICAL = /^(0|[1-9][0-9]*)$/;
const CONTRACT = 'id,created_at,region,worker,sequence,layout_version';
let n = 0, failed = 0;

function check(ok, desc, why) {
	n++;
	console.log(`${ok ? 'ok' : 'not ok'} ${n} ${desc}`);
	if (!ok) {
		failed++;
		if (why)
			console.log(`# ${why}`);
	}
}

function decode(id) {
	const ms = id >> 22n;
	return {
		created_at: new Date(Number(ms + EPOCH)).toISOString(),
		region: Number((id >> 19n) & 7n),
		worker: Number((id >> 12n) & 127n),
		sequence: Number(id & 4095n),
	};
}

async function get(path, init) {
	const res = await fetch(base + path, init);
	return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

const publicMode = process.argv[2] === '--public';
const [base, workerArg, errorsFile] = process.argv.slice(publicMode ? 3 : 2);
const worker = Number(workerArg);

// --public: 100 IDs with their public IDs, then every pair decoded back.
if (publicMode) {
	const p = await get('/v1/ids:next', {
		method: 'POST', headers: { 'content-type': 'application/json' },
		body: JSON.stringify({ count: 100, public: true }),
	});
	const o = JSON.parse(p.text);
	check(p.status === 200 && Object.keys(o).join(',') === 'ids,public,layout_version',
	      'POST {"count": 100, "public": true}: {"ids": [...], "public": [...], "layout_version": 1}',
	      p.text.slice(0, 200));
	const pub = o.public || [];
	check(Array.isArray(pub) && pub.length === o.ids.length &&
	      pub.every(s => typeof s === 'string' && CANONICAL.test(s) && BigInt(s) <= ID_MAX),
	      'every public ID a canonical decimal string up to 2^63-1, one per ID',
	      JSON.stringify(pub.slice(0, 5)));
	check(new Set(pub).size === pub.length && pub.every((s, i) => s !== o.ids[i]),
	      'the public IDs are distinct, and none is its ID');
	let bad = [];
	for (let i = 0; i < pub.length; i++) {
		const a = await get(`/v1/public/${pub[i]}`);
		const b = await get(`/v1/ids/${o.ids[i]}`);
		if (a.status !== 200 || a.text !== b.text || JSON.parse(a.text).id !== o.ids[i])
			bad.push(`${pub[i]} -> ${a.status} ${a.text} (want ${b.text})`);
	}
	check(bad.length === 0, 'GET /v1/public/{pub} answers exactly GET /v1/ids/{id}, in order',
	      bad.slice(0, 3).join('; '));
	console.log(`1..${n}`);
	process.exit(failed ? 1 : 0);
}

// POST /v1/ids:next: 1000 IDs, exact strings, strictly increasing.
const r = await get('/v1/ids:next', {
	method: 'POST', headers: { 'content-type': 'application/json' },
	body: JSON.stringify({ count: 1000, caller: 'order-service' }),
});
check(r.status === 200 && r.type === 'application/json', 'POST count 1000: 200, application/json',
      `${r.status} ${r.type}`);
const body = JSON.parse(r.text);
check(Object.keys(body).join(',') === 'ids,layout_version' && body.layout_version === 1,
      'the answer is {"ids": [...], "layout_version": 1}', r.text.slice(0, 200));
const ids = body.ids;
check(Array.isArray(ids) && ids.length === 1000, 'exactly 1000 IDs', `${ids && ids.length}`);
let problems = [];
let prev = -1n;
for (const s of ids) {
	if (typeof s !== 'string' || !CANONICAL.test(s)) {
		problems.push(`${JSON.stringify(s)} is not a canonical decimal string`);
		continue;
	}
	const id = BigInt(s);
	if (id > ID_MAX)
		problems.push(`${s} above 2^63-1`);
	if (id <= prev)
		problems.push(`${s} not above ${prev}`);
	prev = id;
	if (String(id) !== s || !r.text.includes(`"${s}"`))
		problems.push(`${s} not kept exactly`);
	const d = decode(id);
	if (d.region !== 0 || d.worker !== worker)
		problems.push(`${s}: node ${d.region}/${d.worker}, not 0/${worker}`);
}
check(problems.length === 0, 'every ID a string, exact in BigInt, strictly increasing, node 0/worker',
      problems.slice(0, 5).join('; '));
// Beyond 2^53 a JSON number would have lost them: strings are the point.
const lossy = ids.filter(s => BigInt(Number(s)) !== BigInt(s)).length;
check(lossy > 0, `${lossy} of the IDs would have been rounded as JSON numbers`);

// No body: one ID, above the batch.
const one = await get('/v1/ids:next', { method: 'POST' });
const oneIds = JSON.parse(one.text).ids;
check(one.status === 200 && oneIds.length === 1 && BigInt(oneIds[0]) > prev,
      'POST without a body: one ID, above the batch before', one.text);

// GET /v1/ids/{id}: the contract's shape, the same fields as BigInt says.
const sample = [ids[0], ids[999], oneIds[0], '0', '9223372036854775807', '108421920055775237'];
for (const s of sample) {
	const g = await get(`/v1/ids/${s}`);
	let o = null;
	try {
		o = JSON.parse(g.text);
	} catch (e) {
		check(false, `GET /v1/ids/${s} parses`, g.text);
		continue;
	}
	const d = decode(BigInt(s));
	const keys = Object.keys(o).slice(0, 6).join(',');
	const good = g.status === 200 && keys === CONTRACT && o.id === s &&
		o.created_at === d.created_at && o.region === d.region && o.worker === d.worker &&
		o.sequence === d.sequence && o.layout_version === 1 &&
		BigInt(o.unix_ms) === (BigInt(s) >> 22n) + EPOCH;
	check(good, `GET /v1/ids/${s}: the contract's fields, as BigInt decodes them`, g.text);
}
const ex = JSON.parse((await get('/v1/ids/108421920055775237')).text);
check(ex.id === '108421920055775237' && ex.created_at === '2026-10-27T04:30:00.123Z' &&
      ex.region === 1 && ex.worker === 37 && ex.sequence === 5 && ex.layout_version === 1,
      "the contract's example: 2026-10-27T04:30:00.123Z, region 1, worker 37, sequence 5, layout 1",
      JSON.stringify(ex));

// GET /v1/ids:min: the smallest ID of the millisecond, in BigInt too.
for (const [at, q] of [['2026-03-15T00:00:00Z', '2026-03-15T00:00:00Z'],
		      ['2026-01-01T02:00:00.001+02:00', '2026-01-01T02:00:00.001%2B02:00'],
		      ['2025-06-01T00:00:00Z', '2025-06-01T00:00:00Z'],
		      ['2095-09-07T15:47:35.551Z', '2095-09-07T15:47:35.551Z']]) {
	const m = await get(`/v1/ids:min?at=${q}`);
	const t = BigInt(Date.parse(at));
	const want = t < EPOCH ? 0n : (t - EPOCH) << 22n;
	let o = {};
	try {
		o = JSON.parse(m.text);
	} catch (e) { /* reported below */ }
	check(m.status === 200 && Object.keys(o).join(',') === 'id' && o.id === String(want),
	      `GET /v1/ids:min?at=${at}: {"id": "${want}"}`, m.text);
}

// /livez and /readyz are JSON too.
const live = await get('/livez');
check(live.status === 200 && JSON.parse(live.text).status === 'ok', 'GET /livez: {"status": "ok"}',
      live.text);

// The error answers run.sh saved.
if (errorsFile) {
	for (const line of readFileSync(errorsFile, 'utf8').split('\n').filter(Boolean)) {
		const [status, code, file] = line.split(' ');
		const text = readFileSync(file, 'utf8');
		let o = null;
		try {
			o = JSON.parse(text);
		} catch (e) { /* reported below */ }
		const good = o && Object.keys(o).join(',') === 'error' &&
			Object.keys(o.error).join(',') === 'code,message' &&
			o.error.code === code && typeof o.error.message === 'string' &&
			o.error.message.length > 0;
		check(good, `the ${status} answer parses as {"error": {"code": "${code}", "message": ...}}`,
		      text);
	}
}
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
