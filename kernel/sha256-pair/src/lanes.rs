//! Up to sixteen messages through AVX-512, one message per 32-bit lane of each register: every
//! instruction does one step of sixteen SHA-256s (multi-buffer SHA-256). On the Xeon measured
//! this has ~1.8x the throughput of two messages through SHA-NI (issue 20, ARCHITECTURE.md),
//! because SHA-NI's round instruction is slow there while AVX-512 has two
//! 512-bit units and a three-input logic instruction for SHA-256's choice and majority.

use core::arch::x86_64::{
    __m512i, __mmask16, _mm_set_epi64x, _mm512_add_epi32, _mm512_broadcast_i32x4,
    _mm512_loadu_si512, _mm512_mask_add_epi32, _mm512_ror_epi32, _mm512_set1_epi32,
    _mm512_shuffle_epi8, _mm512_shuffle_i32x4, _mm512_srli_epi32, _mm512_storeu_si512,
    _mm512_ternarylogic_epi32, _mm512_unpackhi_epi32, _mm512_unpackhi_epi64, _mm512_unpacklo_epi32,
    _mm512_unpacklo_epi64,
};

use crate::blocks::Blocks;
use crate::shani::{BYTE_SWAP, K};

/// How many messages one pass takes.
pub(crate) const LANES: usize = 16;

cpufeatures::new!(avx512, "avx512f", "avx512bw");

/// Whether this CPU has the instructions [`compress_lanes`] uses (asked once per process).
pub(crate) fn available() -> bool {
    avx512::get()
}

/// Compresses every block of every message in `blocks` (at most [`LANES`]), each from its
/// chaining value in `states`. Does nothing when the CPU lacks the instructions.
pub(crate) fn compress_lanes(states: &mut [[u32; 8]], blocks: &mut [Blocks<'_>]) {
    if !available() || states.len() != blocks.len() || blocks.len() > LANES {
        return;
    }
    // SAFETY: the CPU has every feature `lanes` is compiled for (checked just above).
    #[allow(unsafe_code)]
    unsafe {
        lanes(states, blocks);
    }
}

/// A lane with no block left reads this, and its result is dropped (masked).
const IDLE_BLOCK: [u8; 64] = [0; 64];

/// [`compress_lanes`] on a CPU with the features: the chaining values transposed into eight
/// registers (word `n` of every lane in register `n`), a block of every lane per step until no
/// lane has one left, and back.
#[target_feature(enable = "avx512f,avx512bw")]
fn lanes(states: &mut [[u32; 8]], blocks: &mut [Blocks<'_>]) {
    let mut vectors = [_mm512_set1_epi32(0); 8];
    for (word, vector) in vectors.iter_mut().enumerate() {
        let mut lane_words = [0_u32; LANES];
        for (lane, state) in states.iter().enumerate() {
            lane_words[lane] = state[word];
        }
        *vector = load_words(&lane_words);
    }
    loop {
        let mut active: __mmask16 = 0;
        let mut rows = [&IDLE_BLOCK; LANES];
        for (lane, lane_blocks) in blocks.iter_mut().enumerate() {
            if let Some(block) = lane_blocks.next_block() {
                rows[lane] = block;
                active |= 1 << lane;
            }
        }
        if active == 0 {
            break;
        }
        compress(&mut vectors, &rows, active);
    }
    for (word, vector) in vectors.iter().enumerate() {
        let lane_words = store_words(*vector);
        for (lane, state) in states.iter_mut().enumerate() {
            state[word] = lane_words[lane];
        }
    }
}

#[target_feature(enable = "avx512f,avx512bw")]
fn load_words(words: &[u32; LANES]) -> __m512i {
    // SAFETY: `words` is 64 bytes, the size of the unaligned load.
    #[allow(unsafe_code)]
    unsafe {
        _mm512_loadu_si512(words.as_ptr().cast())
    }
}

#[target_feature(enable = "avx512f,avx512bw")]
fn store_words(vector: __m512i) -> [u32; LANES] {
    let mut words = [0_u32; LANES];
    // SAFETY: `words` is 64 bytes, the size of the unaligned store.
    #[allow(unsafe_code)]
    unsafe {
        _mm512_storeu_si512(words.as_mut_ptr().cast(), vector);
    }
    words
}

/// The sixteen blocks' words, big-endian, transposed: register `w` holds word `w` of every lane.
#[target_feature(enable = "avx512f,avx512bw")]
fn transposed(rows: &[&[u8; 64]; LANES]) -> [__m512i; 16] {
    let [high, low] = BYTE_SWAP.map(u64::cast_signed);
    let big_endian = _mm512_broadcast_i32x4(_mm_set_epi64x(high, low));
    let mut r = [_mm512_set1_epi32(0); 16];
    for (row, block) in r.iter_mut().zip(rows) {
        // SAFETY: a block is 64 bytes, the size of the unaligned load.
        #[allow(unsafe_code)]
        let bytes = unsafe { _mm512_loadu_si512(block.as_ptr().cast()) };
        *row = _mm512_shuffle_epi8(bytes, big_endian);
    }
    // Pairs of rows interleaved by word, then by two words: within each 128-bit quarter,
    // `u[4g + k]` holds word `4q + k` of rows 4g..4g+3 (quarter q).
    let mut t = [_mm512_set1_epi32(0); 16];
    for pair in 0..8 {
        t[2 * pair] = _mm512_unpacklo_epi32(r[2 * pair], r[2 * pair + 1]);
        t[2 * pair + 1] = _mm512_unpackhi_epi32(r[2 * pair], r[2 * pair + 1]);
    }
    let mut u = [_mm512_set1_epi32(0); 16];
    for group in 0..4 {
        let at = 4 * group;
        u[at] = _mm512_unpacklo_epi64(t[at], t[at + 2]);
        u[at + 1] = _mm512_unpackhi_epi64(t[at], t[at + 2]);
        u[at + 2] = _mm512_unpacklo_epi64(t[at + 1], t[at + 3]);
        u[at + 3] = _mm512_unpackhi_epi64(t[at + 1], t[at + 3]);
    }
    // Then the quarters: word `4q + k` gathers quarter q of u[k], u[4 + k], u[8 + k], u[12 + k].
    let mut w = [_mm512_set1_epi32(0); 16];
    for k in 0..4 {
        let v0 = _mm512_shuffle_i32x4::<0x44>(u[k], u[4 + k]);
        let v1 = _mm512_shuffle_i32x4::<0xEE>(u[k], u[4 + k]);
        let v2 = _mm512_shuffle_i32x4::<0x44>(u[8 + k], u[12 + k]);
        let v3 = _mm512_shuffle_i32x4::<0xEE>(u[8 + k], u[12 + k]);
        w[k] = _mm512_shuffle_i32x4::<0x88>(v0, v2);
        w[4 + k] = _mm512_shuffle_i32x4::<0xDD>(v0, v2);
        w[8 + k] = _mm512_shuffle_i32x4::<0x88>(v1, v3);
        w[12 + k] = _mm512_shuffle_i32x4::<0xDD>(v1, v3);
    }
    w
}

/// One SHA-256 round in place: `d` and `h` take the new values, and the caller's next round
/// names the registers one place on (what was `h` is its `a`), so no register is copied. Word
/// `w[i % 16]` is scheduled first from the sixteen before it, from round 16 on.
macro_rules! round {
    (
        $w:ident, $i:expr,
        $a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident
    ) => {
        if $i >= 16 {
            $w[$i % 16] = scheduled(&$w, $i);
        }
        let t1 = _mm512_add_epi32(
            _mm512_add_epi32($h, rotations_xored::<6, 11, 25>($e)),
            _mm512_add_epi32(
                _mm512_ternarylogic_epi32::<0xCA>($e, $f, $g),
                _mm512_add_epi32($w[$i % 16], _mm512_set1_epi32(K[$i].cast_signed())),
            ),
        );
        $d = _mm512_add_epi32($d, t1);
        $h = _mm512_add_epi32(
            t1,
            _mm512_add_epi32(
                rotations_xored::<2, 13, 22>($a),
                _mm512_ternarylogic_epi32::<0xE8>($a, $b, $c),
            ),
        );
    };
}

/// Rounds `i` to `i + 7`, after which the registers are back under their own names.
macro_rules! eight_rounds {
    (
        $w:ident, $i:expr,
        $a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident
    ) => {
        round!($w, $i, $a, $b, $c, $d, $e, $f, $g, $h);
        round!($w, $i + 1, $h, $a, $b, $c, $d, $e, $f, $g);
        round!($w, $i + 2, $g, $h, $a, $b, $c, $d, $e, $f);
        round!($w, $i + 3, $f, $g, $h, $a, $b, $c, $d, $e);
        round!($w, $i + 4, $e, $f, $g, $h, $a, $b, $c, $d);
        round!($w, $i + 5, $d, $e, $f, $g, $h, $a, $b, $c);
        round!($w, $i + 6, $c, $d, $e, $f, $g, $h, $a, $b);
        round!($w, $i + 7, $b, $c, $d, $e, $f, $g, $h, $a);
    };
}

/// `x` rotated right by `A`, `B` and `C`, the three combined by exclusive or: SHA-256's Σ0 is
/// `<2, 13, 22>`, Σ1 `<6, 11, 25>`.
#[target_feature(enable = "avx512f,avx512bw")]
fn rotations_xored<const A: i32, const B: i32, const C: i32>(x: __m512i) -> __m512i {
    _mm512_ternarylogic_epi32::<0x96>(
        _mm512_ror_epi32::<A>(x),
        _mm512_ror_epi32::<B>(x),
        _mm512_ror_epi32::<C>(x),
    )
}

/// Message-schedule word `i` (16 or more) from the sixteen before it, held in `w` by `i % 16`.
#[target_feature(enable = "avx512f,avx512bw")]
fn scheduled(w: &[__m512i; 16], i: usize) -> __m512i {
    let (w2, w7, w15, w16) = (
        w[(i - 2) % 16],
        w[(i - 7) % 16],
        w[(i - 15) % 16],
        w[i % 16],
    );
    let small_sigma1 = _mm512_ternarylogic_epi32::<0x96>(
        _mm512_ror_epi32::<17>(w2),
        _mm512_ror_epi32::<19>(w2),
        _mm512_srli_epi32::<10>(w2),
    );
    let small_sigma0 = _mm512_ternarylogic_epi32::<0x96>(
        _mm512_ror_epi32::<7>(w15),
        _mm512_ror_epi32::<18>(w15),
        _mm512_srli_epi32::<3>(w15),
    );
    _mm512_add_epi32(
        _mm512_add_epi32(small_sigma1, w7),
        _mm512_add_epi32(small_sigma0, w16),
    )
}

/// One block of every lane; lanes outside `active` keep their chaining value. The 64 rounds are
/// written out (macros) so that the schedule's sixteen words stay in registers.
// `a` to `h` and `w` are FIPS 180-4's names for the working variables and the schedule.
#[allow(clippy::many_single_char_names)]
#[target_feature(enable = "avx512f,avx512bw")]
fn compress(state: &mut [__m512i; 8], rows: &[&[u8; 64]; LANES], active: __mmask16) {
    let mut w = transposed(rows);
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *state;
    eight_rounds!(w, 0, a, b, c, d, e, f, g, h);
    eight_rounds!(w, 8, a, b, c, d, e, f, g, h);
    eight_rounds!(w, 16, a, b, c, d, e, f, g, h);
    eight_rounds!(w, 24, a, b, c, d, e, f, g, h);
    eight_rounds!(w, 32, a, b, c, d, e, f, g, h);
    eight_rounds!(w, 40, a, b, c, d, e, f, g, h);
    eight_rounds!(w, 48, a, b, c, d, e, f, g, h);
    eight_rounds!(w, 56, a, b, c, d, e, f, g, h);
    for (word, value) in state.iter_mut().zip([a, b, c, d, e, f, g, h]) {
        *word = _mm512_mask_add_epi32(*word, active, *word, value);
    }
}
