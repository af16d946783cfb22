-- Large Temporal payloads, stored once by content hash; histories carry only the hash (claim check).
CREATE TABLE blobs (
    hash        text PRIMARY KEY,          -- sha256 of data
    data        bytea NOT NULL,            -- a serialized temporal.api.common.v1.Payload
    created_at  timestamptz NOT NULL DEFAULT now()
);
