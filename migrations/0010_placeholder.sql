-- Placeholder for schema 10, which another branch supplies (the unique
-- index); only here so that 0011 has a predecessor. Not to be merged.
SELECT 1;
