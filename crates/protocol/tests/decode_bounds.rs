//! Decoding allocates by what the input holds, never by the lengths it
//! claims: adversarial messages and batches whose length prefixes claim
//! gigabytes, thousands of records or an oversized value are refused, and
//! all of them together allocate less than 64 KiB while being decoded.
//! (Its own test binary: it installs a counting global allocator.)

use protocol::handoff::{Batch, Message, PROTOCOL_VERSION};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// A varint, as postcard writes lengths.
fn varint(mut n: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

/// The start of a message from r0 to r1 with no generation, then `body`.
fn message(body: &[u8]) -> Vec<u8> {
    let mut bytes = varint(u64::from(PROTOCOL_VERSION));
    bytes.extend([0, 0, 1]);
    bytes.extend_from_slice(body);
    bytes
}

#[test]
fn lengths_are_checked_before_anything_is_allocated() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let instance = [1u8, 1];
    let stamp = [1u8, 1];
    let filler = |n: usize| vec![0u8; n];
    let big: usize = (1 << 20) + 1;
    let cases: Vec<Vec<u8>> = vec![
        // Lengths beyond what the input holds: a key claiming 4 GiB, a
        // value claiming 1 GiB, records claiming 2^40 entries, a digest
        // claiming 1 GiB, an ack's key claiming 4 GiB (postcard checks a
        // length against the bytes left).
        message(&[[0u8].as_slice(), &instance, &varint(1 << 32)].concat()),
        message(&[[0u8].as_slice(), &instance, &[1, b'k'], &stamp, &[1, 0], &varint(1 << 30)].concat()),
        message(&[[13u8].as_slice(), &stamp, &varint(1 << 40)].concat()),
        message(&[[12u8].as_slice(), &instance, &[1], &stamp, &varint(1 << 30)].concat()),
        message(&[[18u8].as_slice(), &instance, &instance, &varint(1 << 32)].concat()),
        // Lengths within what the input holds but beyond the protocol's
        // limits (checked by its decoders before they copy or reserve): a
        // key of 513 bytes, a value of 1 MiB + 1, 16,386 records, a chunk
        // of as many, a digest of the wrong size.
        message(&[[0u8].as_slice(), &instance, &varint(513), &filler(513)].concat()),
        message(
            &[[0u8].as_slice(), &instance, &[1, b'k'], &stamp, &[1, 0], &varint(big as u64), &filler(big)].concat(),
        ),
        message(&[[13u8].as_slice(), &stamp, &varint(16_386), &filler(16_386 * 8)].concat()),
        message(
            &[[4u8].as_slice(), &instance, &instance, &[1], &stamp, &[0], &varint(16_386), &filler(16_386 * 8)]
                .concat(),
        ),
        message(&[[12u8].as_slice(), &instance, &[1], &stamp, &varint(4096), &filler(4096)].concat()),
    ];
    let batches = [varint(1 << 30), [varint(1), varint(1 << 32)].concat(), [varint(257), filler(257)].concat()];
    let before = dhat::HeapStats::get();
    for case in &cases {
        assert!(Message::decode(case).is_err(), "{:?}", &case[..case.len().min(16)]);
    }
    for batch in &batches {
        assert!(Batch::decode(batch).is_err(), "{:?}", &batch[..batch.len().min(16)]);
    }
    let after = dhat::HeapStats::get();
    let allocated = after.total_bytes - before.total_bytes;
    assert!(allocated < 64 * 1024, "decoding adversarial input allocated {allocated} bytes");
}
