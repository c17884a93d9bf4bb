-- Back to version 4: no console sessions (every console user signs in again).

DROP TABLE {schema}.sessions;
