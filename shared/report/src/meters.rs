//! Requests, bytes and capacity units as AWS bills them, counted by the stores' meters.

/// What went through the stores since the meters were last read.
#[derive(Debug, Default, Clone, Copy, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct Meters {
    /// DynamoDB read request units (strongly consistent: 1 per 4 KB read).
    pub read_units: f64,
    /// DynamoDB write request units (1 per 1 KB written, 2 per 1 KB in a transaction).
    pub write_units: f64,
    /// Metadata requests.
    pub meta_requests: u64,
    /// Time spent in metadata requests.
    pub meta_secs: f64,
    /// S3 PUT, COPY, POST and LIST requests (billed per 1,000).
    pub s3_puts: u64,
    /// S3 GET and HEAD requests (billed per 1,000).
    pub s3_gets: u64,
    /// Bytes written to the object store.
    pub bytes_put: u64,
    /// Bytes written to the metadata store.
    pub meta_bytes: u64,
    /// Time spent in object store requests.
    pub store_secs: f64,
}

impl Meters {
    /// `self - earlier`, field by field.
    pub fn since(&self, earlier: &Meters) -> Meters {
        Meters {
            read_units: self.read_units - earlier.read_units,
            write_units: self.write_units - earlier.write_units,
            meta_requests: self.meta_requests - earlier.meta_requests,
            meta_secs: self.meta_secs - earlier.meta_secs,
            s3_puts: self.s3_puts - earlier.s3_puts,
            s3_gets: self.s3_gets - earlier.s3_gets,
            bytes_put: self.bytes_put - earlier.bytes_put,
            meta_bytes: self.meta_bytes - earlier.meta_bytes,
            store_secs: self.store_secs - earlier.store_secs,
        }
    }

    /// Adds `other` to `self`.
    pub fn add(&mut self, other: &Meters) {
        self.read_units += other.read_units;
        self.write_units += other.write_units;
        self.meta_requests += other.meta_requests;
        self.meta_secs += other.meta_secs;
        self.s3_puts += other.s3_puts;
        self.s3_gets += other.s3_gets;
        self.bytes_put += other.bytes_put;
        self.meta_bytes += other.meta_bytes;
        self.store_secs += other.store_secs;
    }
}
