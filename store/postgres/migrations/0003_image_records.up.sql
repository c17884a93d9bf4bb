-- imagegen store, version 3: image records and their bytes apart. An
-- image's row keeps its record (owner, size, checksum, times); its bytes
-- are in a BlobStore, by default the blobs table below (any other, such
-- as S3, through Config.Blobs). Bytes already stored move to blobs.

CREATE TABLE {schema}.blobs (
	key          text PRIMARY KEY,
	data         bytea NOT NULL,
	content_type text NOT NULL,
	written_at   timestamptz NOT NULL
);

INSERT INTO {schema}.blobs (key, data, content_type, written_at)
SELECT id, data, content_type, now() FROM {schema}.images;

ALTER TABLE {schema}.images
	ADD COLUMN owner text NOT NULL DEFAULT '',
	ADD COLUMN size bigint NOT NULL DEFAULT 0,
	ADD COLUMN checksum text NOT NULL DEFAULT '',
	ADD COLUMN created_at timestamptz NOT NULL DEFAULT now();

UPDATE {schema}.images i SET owner = t.owner, size = length(i.data)
FROM {schema}.tasks t WHERE t.id = i.task_id;

ALTER TABLE {schema}.images DROP COLUMN data;
