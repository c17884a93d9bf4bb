-- Back to version 2: image bytes in the images table again (those in the
-- blobs table; images whose bytes live in another BlobStore get none).

ALTER TABLE {schema}.images ADD COLUMN data bytea NOT NULL DEFAULT '';
UPDATE {schema}.images i SET data = b.data FROM {schema}.blobs b WHERE b.key = i.id;
ALTER TABLE {schema}.images ALTER COLUMN data DROP DEFAULT;
ALTER TABLE {schema}.images DROP COLUMN owner, DROP COLUMN size, DROP COLUMN checksum, DROP COLUMN created_at;
DROP TABLE {schema}.blobs;
