//! The hashing floor: canonical encoding and SHA-256 digest of a 20-work-item State body.
//!
//! Every accepted event hashes about twice the canonical State body (the prior-State digest and
//! the result digest, whose preimage embeds the next State), so these figures bound from below
//! what `LiveState::apply` and replay can cost per event on a task of this size.

#![allow(clippy::unwrap_used, clippy::expect_used)]
// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

mod common;

use std::hint::black_box;

use common::{WORK_ITEMS, configure_fast, history};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use valp_kernel::canonical::{Canonical, sha256_digest};
use valp_kernel::live::LiveState;
use valp_kernel::replay::replay_compact;
use valp_sha256_pair::{INITIAL, Message};

/// Entries walked before the body is sampled, so that items carry attempts and control is set.
const WARM_HISTORY: usize = 1_000;

fn bench_digest(c: &mut Criterion) {
    let history = history(WORK_ITEMS, WARM_HISTORY);
    let live: LiveState = replay_compact(&history.genesis, &history.entries)
        .map(|replay| LiveState::new(replay.state))
        .unwrap();
    let body = live.body().clone();
    let body_bytes = body.canonical_bytes();
    let len = u64::try_from(body_bytes.len()).unwrap();
    eprintln!(
        "digest: {WORK_ITEMS}-item State body after {WARM_HISTORY} events: {len} canonical bytes"
    );

    let mut group = c.benchmark_group("state_body_20wi");
    configure_fast(&mut group);
    group.throughput(Throughput::Bytes(len));
    group.bench_function("canonical_bytes", |b| {
        b.iter(|| black_box(&body).canonical_bytes());
    });
    group.bench_function("sha256_of_encoded", |b| {
        b.iter(|| sha256_digest(black_box(&body_bytes)));
    });
    group.bench_function("digest", |b| b.iter(|| black_box(&body).digest()));
    // The per-event prior-State digest of the in-place path: history midstate plus the cached
    // body encoding (no re-encoding).
    group.bench_function("live_state_digest", |b| {
        b.iter(|| black_box(&live).state_digest());
    });
    group.finish();

    let block = vec![0x5a_u8; 64 * 1024];
    let mut group = c.benchmark_group("sha256_raw");
    configure_fast(&mut group);
    group.throughput(Throughput::Bytes(u64::try_from(block.len()).unwrap()));
    group.bench_function("64KiB", |b| b.iter(|| sha256_digest(black_box(&block))));
    group.finish();

    // A verified entry's two passes over the body: one after the other (`sha2`), and side by
    // side (`valp_sha256_pair`, what a verify's digest checks run).
    let mut group = c.benchmark_group("two_body_passes_20wi");
    configure_fast(&mut group);
    group.throughput(Throughput::Bytes(2 * len));
    group.bench_function("one_after_the_other", |b| {
        b.iter(|| {
            (
                sha256_digest(black_box(&body_bytes)),
                sha256_digest(black_box(&body_bytes[1..])),
            )
        });
    });
    group.bench_function("side_by_side", |b| {
        let (first, second): ([&[u8]; 1], [&[u8]; 1]) = ([&body_bytes], [&body_bytes[1..]]);
        b.iter(|| {
            valp_sha256_pair::digest_pair(
                &Message::new(INITIAL, 0, black_box(&first)),
                &Message::new(INITIAL, 0, black_box(&second)),
            )
        });
    });
    group.finish();

    // Sixteen entries' two passes each, as a verify's batch of checks runs them
    // (`valp_sha256_pair::digest_many`: sixteen messages side by side through AVX-512 where the
    // CPU has it). Per entry: the time over 16; the throughput compares with the group above.
    let mut group = c.benchmark_group("sixteen_entries_body_passes_20wi");
    configure_fast(&mut group);
    group.throughput(Throughput::Bytes(32 * len));
    let pieces: Vec<[&[u8]; 1]> = (0..32).map(|n| [&body_bytes[n % 2..]]).collect();
    let messages: Vec<Message<'_>> = pieces
        .iter()
        .map(|piece| Message::new(INITIAL, 0, piece))
        .collect();
    let mut digests = Vec::with_capacity(32);
    group.bench_function("digest_many", |b| {
        b.iter(|| valp_sha256_pair::digest_many(black_box(&messages), &mut digests));
    });
    group.finish();
}

criterion_group!(benches, bench_digest);
criterion_main!(benches);
