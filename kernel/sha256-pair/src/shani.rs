//! Both messages' blocks through the SHA-NI instructions, their rounds interleaved: each
//! `sha256rnds2` of one message is followed by the other's, which does not wait for it.

use core::arch::x86_64::{
    __m128i, _mm_add_epi32, _mm_alignr_epi8, _mm_blend_epi16, _mm_extract_epi32, _mm_loadu_si128,
    _mm_set_epi32, _mm_set_epi64x, _mm_sha256msg1_epu32, _mm_sha256msg2_epu32,
    _mm_sha256rnds2_epu32, _mm_shuffle_epi8, _mm_shuffle_epi32,
};

use crate::blocks::Blocks;

/// The round constants (FIPS 180-4, 4.2.2).
pub(crate) const K: [u32; 64] = [
    0x428a_2f98,
    0x7137_4491,
    0xb5c0_fbcf,
    0xe9b5_dba5,
    0x3956_c25b,
    0x59f1_11f1,
    0x923f_82a4,
    0xab1c_5ed5,
    0xd807_aa98,
    0x1283_5b01,
    0x2431_85be,
    0x550c_7dc3,
    0x72be_5d74,
    0x80de_b1fe,
    0x9bdc_06a7,
    0xc19b_f174,
    0xe49b_69c1,
    0xefbe_4786,
    0x0fc1_9dc6,
    0x240c_a1cc,
    0x2de9_2c6f,
    0x4a74_84aa,
    0x5cb0_a9dc,
    0x76f9_88da,
    0x983e_5152,
    0xa831_c66d,
    0xb003_27c8,
    0xbf59_7fc7,
    0xc6e0_0bf3,
    0xd5a7_9147,
    0x06ca_6351,
    0x1429_2967,
    0x27b7_0a85,
    0x2e1b_2138,
    0x4d2c_6dfc,
    0x5338_0d13,
    0x650a_7354,
    0x766a_0abb,
    0x81c2_c92e,
    0x9272_2c85,
    0xa2bf_e8a1,
    0xa81a_664b,
    0xc24b_8b70,
    0xc76c_51a3,
    0xd192_e819,
    0xd699_0624,
    0xf40e_3585,
    0x106a_a070,
    0x19a4_c116,
    0x1e37_6c08,
    0x2748_774c,
    0x34b0_bcb5,
    0x391c_0cb3,
    0x4ed8_aa4a,
    0x5b9c_ca4f,
    0x682e_6ff3,
    0x748f_82ee,
    0x78a5_636f,
    0x84c8_7814,
    0x8cc7_0208,
    0x90be_fffa,
    0xa450_6ceb,
    0xbef9_a3f7,
    0xc671_78f2,
];

/// The byte shuffle that turns each little-endian 32-bit word of 16 bytes big-endian (the high
/// and low 64 bits of `pshufb`'s control).
pub(crate) const BYTE_SWAP: [u64; 2] = [0x0C0D_0E0F_0809_0A0B, 0x0405_0607_0001_0203];

cpufeatures::new!(sha_ni, "sha", "sse2", "ssse3", "sse4.1");

/// Whether this CPU has the instructions [`compress_pair`] uses (asked once per process).
fn available() -> bool {
    sha_ni::get()
}

/// Compresses the blocks of `a` and `b` two at a time, as long as both have one; what is left
/// of the longer stays in its [`Blocks`]. Does nothing when the CPU lacks the instructions.
pub(crate) fn compress_pair(
    state_a: &mut [u32; 8],
    a: &mut Blocks<'_>,
    state_b: &mut [u32; 8],
    b: &mut Blocks<'_>,
) {
    if !available() {
        return;
    }
    // SAFETY: the CPU has every feature `pair` is compiled for (checked just above).
    #[allow(unsafe_code)]
    unsafe {
        pair(state_a, a, state_b, b);
    }
}

/// The chaining value as the two registers the rounds work on (ABEF, CDGH).
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn load(state: &[u32; 8]) -> (__m128i, __m128i) {
    let word = |index: usize| state[index].cast_signed();
    let dcba = _mm_set_epi32(word(3), word(2), word(1), word(0));
    let hgfe = _mm_set_epi32(word(7), word(6), word(5), word(4));
    let cdab = _mm_shuffle_epi32(dcba, 0xB1);
    let efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    (
        _mm_alignr_epi8(cdab, efgh, 8),
        _mm_blend_epi16(efgh, cdab, 0xF0),
    )
}

/// The chaining value back from the two registers.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn store(abef: __m128i, cdgh: __m128i, state: &mut [u32; 8]) {
    let feba = _mm_shuffle_epi32(abef, 0x1B);
    let dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    let dcba = _mm_blend_epi16(feba, dchg, 0xF0);
    let hgef = _mm_alignr_epi8(dchg, feba, 8);
    *state = [
        _mm_extract_epi32(dcba, 0).cast_unsigned(),
        _mm_extract_epi32(dcba, 1).cast_unsigned(),
        _mm_extract_epi32(dcba, 2).cast_unsigned(),
        _mm_extract_epi32(dcba, 3).cast_unsigned(),
        _mm_extract_epi32(hgef, 0).cast_unsigned(),
        _mm_extract_epi32(hgef, 1).cast_unsigned(),
        _mm_extract_epi32(hgef, 2).cast_unsigned(),
        _mm_extract_epi32(hgef, 3).cast_unsigned(),
    ];
}

/// A block's sixteen words, big-endian, four to a register.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn words(block: &[u8; 64]) -> [__m128i; 4] {
    let [high, low] = BYTE_SWAP.map(u64::cast_signed);
    let big_endian = _mm_set_epi64x(high, low);
    let load = |at: usize| {
        // SAFETY: `at` is 0, 16, 32 or 48: the 16 bytes read are inside the 64-byte block (an
        // unaligned load needs no alignment).
        // `_mm_loadu_si128` reads unaligned: the cast's alignment is not relied on.
        #[allow(unsafe_code, clippy::cast_ptr_alignment)]
        let bytes = unsafe { _mm_loadu_si128(block.as_ptr().add(at).cast::<__m128i>()) };
        _mm_shuffle_epi8(bytes, big_endian)
    };
    [load(0), load(16), load(32), load(48)]
}

/// The next four message-schedule words from the previous sixteen (`w[j..j + 4]`, in turn).
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn schedule(w: &[__m128i; 4], j: usize) -> __m128i {
    let (w0, w1, w2, w3) = (w[j % 4], w[(j + 1) % 4], w[(j + 2) % 4], w[(j + 3) % 4]);
    _mm_sha256msg2_epu32(
        _mm_add_epi32(_mm_sha256msg1_epu32(w0, w1), _mm_alignr_epi8(w3, w2, 4)),
        w3,
    )
}

#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn pair(state_a: &mut [u32; 8], a: &mut Blocks<'_>, state_b: &mut [u32; 8], b: &mut Blocks<'_>) {
    let (mut abef_a, mut cdgh_a) = load(state_a);
    let (mut abef_b, mut cdgh_b) = load(state_b);
    loop {
        // Takes a block of each only when both have one.
        if !(a.has_block() && b.has_block()) {
            break;
        }
        let (Some(block_a), Some(block_b)) = (a.next_block(), b.next_block()) else {
            break;
        };
        let (mut wa, mut wb) = (words(block_a), words(block_b));
        let saved = (abef_a, cdgh_a, abef_b, cdgh_b);
        for round in 0..16 {
            if round >= 4 {
                let at = round % 4;
                wa[at] = schedule(&wa, at);
                wb[at] = schedule(&wb, at);
            }
            let k = |i: usize| K[round * 4 + i].cast_signed();
            let constants = _mm_set_epi32(k(3), k(2), k(1), k(0));
            let ta = _mm_add_epi32(wa[round % 4], constants);
            let tb = _mm_add_epi32(wb[round % 4], constants);
            cdgh_a = _mm_sha256rnds2_epu32(cdgh_a, abef_a, ta);
            cdgh_b = _mm_sha256rnds2_epu32(cdgh_b, abef_b, tb);
            abef_a = _mm_sha256rnds2_epu32(abef_a, cdgh_a, _mm_shuffle_epi32(ta, 0x0E));
            abef_b = _mm_sha256rnds2_epu32(abef_b, cdgh_b, _mm_shuffle_epi32(tb, 0x0E));
        }
        abef_a = _mm_add_epi32(abef_a, saved.0);
        cdgh_a = _mm_add_epi32(cdgh_a, saved.1);
        abef_b = _mm_add_epi32(abef_b, saved.2);
        cdgh_b = _mm_add_epi32(cdgh_b, saved.3);
    }
    store(abef_a, cdgh_a, state_a);
    store(abef_b, cdgh_b, state_b);
}
