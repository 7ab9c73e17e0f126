// SPDX-License-Identifier: GPL-2.0
//
// node js_roundtrip.mjs DECODED.json [MIN_IDS.txt]
//
// A JavaScript client of idgen: JSON from `idgenctl decode --json` or
// `idgenctl mint --json` (the same array of objects) parsed with plain
// JSON.parse keeps every ID exact because IDs are strings; BigInt
// arithmetic on them must decode the same time, region, worker and
// sequence as the C library did.  MIN_IDS.txt holds lines "TIME ID" from
// `idgenctl min-id-at TIME`, recomputed here with BigInt.  Prints TAP.
import { readFileSync } from 'node:fs';

const EPOCH = 1767225600000n;
const ID_MAX = (1n << 63n) - 1n;
let n = 0, failed = 0;

function check(ok, desc, why) {
	n++;
	if (ok) {
		console.log(`ok ${n} ${desc}`);
	} else {
		failed++;
		console.log(`not ok ${n} ${desc}`);
		if (why)
			console.log(`# ${why}`);
	}
}

const [file, minFile] = process.argv.slice(2);
if (!file) {
	console.error('usage: node js_roundtrip.mjs DECODED.json [MIN_IDS.txt]');
	process.exit(2);
}
const text = readFileSync(file, 'utf8');
const objs = JSON.parse(text);
check(Array.isArray(objs) && objs.length > 0, `parsed ${objs.length} decoded IDs`);

let beyond53 = 0;
for (const o of objs) {
	const problems = [];
	if (typeof o.id !== 'string' || !/^(0|[1-9][0-9]*)$/.test(o.id)) {
		check(false, `id ${JSON.stringify(o.id)} is a canonical decimal string`);
		continue;
	}
	const id = BigInt(o.id);
	if (id > ID_MAX)
		problems.push('above 2^63-1');
	// Exact: the string from JSON.parse is the ID the C library wrote.
	if (!text.includes(`"id":"${o.id}"`) || String(id) !== o.id)
		problems.push('not kept exactly');
	if (id > 1n << 53n) {
		beyond53++;
		if (String(Number(o.id)) === o.id && id % 2n === 1n)
			problems.push('a JSON number would have kept it?');
	}
	const ms = id >> 22n;
	const low = id & ((1n << 22n) - 1n);
	if (typeof o.ms !== 'number' || BigInt(o.ms) !== ms)
		problems.push(`ms ${o.ms} != ${ms}`);
	if (BigInt(o.unix_ms) !== ms + EPOCH)
		problems.push(`unix_ms ${o.unix_ms} != ${ms + EPOCH}`);
	const iso = new Date(Number(ms + EPOCH)).toISOString();
	if (o.created_at !== iso)
		problems.push(`created_at ${o.created_at} != ${iso}`);
	// The contract's fields come first, in its order; extras after.
	const keys = Object.keys(o).slice(0, 6).join(',');
	if (keys !== 'id,created_at,region,worker,sequence,layout_version')
		problems.push(`fields ${keys}: not the contract's`);
	if (o.layout_version === 1) {
		const region = Number(low >> 19n), worker = Number((low >> 12n) & 127n),
			seq = Number(low & 4095n);
		if (o.region !== region || o.worker !== worker || o.sequence !== seq)
			problems.push(`fields ${o.region}/${o.worker}/${o.sequence} != ${region}/${worker}/${seq}`);
	} else {
		problems.push(`layout_version ${o.layout_version}: this test knows version 1 only`);
	}
	check(problems.length === 0, `id ${o.id} decodes in BigInt as in C (${o.created_at})`,
	      problems.join('; '));
}
// The point of strings: some of these IDs do not survive as numbers.
const lossy = objs.filter(o => BigInt(o.id) > 1n << 53n &&
	BigInt(JSON.parse(o.id)) !== BigInt(o.id));
check(beyond53 === 0 || lossy.length > 0,
      `${lossy.length} of ${beyond53} IDs above 2^53 would be corrupted as JSON numbers`);

if (minFile) {
	for (const line of readFileSync(minFile, 'utf8').split('\n').filter(Boolean)) {
		const [time, want] = line.split(' ');
		const t = BigInt(Date.parse(time));
		const got = t < EPOCH ? 0n : (t - EPOCH) << 22n;
		check(String(got) === want, `min_id_at(${time}) = ${want} in BigInt too`,
		      `BigInt says ${got}`);
	}
}
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
