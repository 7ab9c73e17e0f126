// SPDX-License-Identifier: GPL-2.0
//
// ids.js: mint 100 IDs with fetch, check them exactly with BigInt, decode
// one and check its fields.  Served by nginx beside idgen-httpd on one
// origin (run.sh); the worker the service simulates comes as ?worker=N.
'use strict';

// Layout version 1: 41 bits of ms since 2026-01-01T00:00:00Z, 3 of
// region, 7 of worker, 12 of sequence.
const EPOCH_UNIX_MS = 1767225600000n;
const TWO_53 = 2n ** 53n;
const COUNT = 100;

const lines = [];
function check(ok, desc, detail) {
	lines.push((ok ? 'ok - ' : 'not ok - ') + desc + (ok || !detail ? '' : ': ' + detail));
	return ok;
}

async function json(method, path, body) {
	const r = await fetch(path, {
		method,
		headers: body ? { 'Content-Type': 'application/json' } : {},
		body: body ? JSON.stringify(body) : undefined,
	});
	const text = await r.text();
	return { status: r.status, type: r.headers.get('Content-Type'), text, body: JSON.parse(text) };
}

async function main() {
	const worker = BigInt(new URLSearchParams(location.search).get('worker'));
	const next = await json('POST', '/v1/ids:next', { count: COUNT, caller: 'browser' });
	check(next.status === 200 && next.type === 'application/json',
	      'POST /v1/ids:next: 200 application/json', next.status + ' ' + next.type);
	// The IDs as the page keeps them: the strings of the answer.
	const ids = next.body.ids;
	if (!check(Array.isArray(ids) && ids.length === COUNT && ids.every(s => typeof s === 'string'),
		   COUNT + ' IDs, every one a string', JSON.stringify(ids).slice(0, 80)))
		return;
	// Each as the bytes on the wire said it, and back out of BigInt.
	const wire = next.text.match(/"ids":\[([^\]]*)\]/)[1].split(',').map(s => s.slice(1, -1));
	const bad = ids.findIndex((s, k) => s !== wire[k] || !/^[1-9][0-9]*$/.test(s) ||
				  BigInt(s).toString() !== wire[k]);
	check(bad === -1, 'every ID is the answer\'s string and round-trips exactly through BigInt',
	      bad >= 0 && ids[bad] + ' for ' + wire[bad]);
	const big = ids.map(BigInt);
	const low = big.find(v => v <= TWO_53);
	check(low === undefined, 'every ID is above 2^53', low);
	// So a JSON number would have rounded them: make sure the check above
	// would have seen it.
	const rounds = ids.filter(s => BigInt(Number(s)).toString() !== s).length;
	check(rounds > 0, 'a Number would round some of them (' + rounds + ' of ' + COUNT + ')');
	const i = big.findIndex((v, k) => k > 0 && v <= big[k - 1]);
	check(i === -1, 'strictly increasing as BigInt', i >= 0 && ids[i - 1] + ' then ' + ids[i]);

	const id = ids[57], v = big[57];
	const get = await json('GET', '/v1/ids/' + id);
	const d = get.body;
	check(get.status === 200 && d.id === id, 'GET /v1/ids/' + id + ': the same ID back',
	      get.status + ' ' + d.id);
	const ms = v >> 22n;
	const want = {
		region: Number((v >> 19n) & 7n),
		worker: Number((v >> 12n) & 127n),
		sequence: Number(v & 4095n),
		layout_version: 1,
		ms: Number(ms),
		unix_ms: Number(ms + EPOCH_UNIX_MS),
		created_at: new Date(Number(ms + EPOCH_UNIX_MS)).toISOString(),
	};
	const wrong = Object.keys(want).filter(k => d[k] !== want[k]);
	check(wrong.length === 0, 'its decoded fields match its bits',
	      wrong.map(k => k + ' ' + JSON.stringify(d[k]) + ' want ' + JSON.stringify(want[k])).join(', '));
	check(BigInt(d.worker) === worker && d.region === 0,
	      'region 0, worker ' + worker + ' (the simulated generator\'s)', d.region + '/' + d.worker);
}

main().catch(e => check(false, 'the page ran', String(e))).finally(() => {
	lines.push('done');
	document.getElementById('verdict').textContent = lines.join('\n');
});
