-- API keys: how a service that holds no tenant grant of its own (pgkgrag serve's login role) acts
-- for the tenant of the key a request carries, with the database checking the key.
--
-- The schema owner makes, lists and revokes keys (kgrag.create_key, kgrag.list_keys,
-- kgrag.revoke_key; pgkgrag keys). A key is shown once, when it is made; the database keeps its
-- sha256. In a transaction, kgrag.use_key(key, tenant) checks the key and names the tenant as
-- kgrag.use_tenant does, sealed with a secret the caller cannot read (kgrag_private.key_mac), so
-- that kgrag.current_tenant(), and with it every row-level security policy, lets the session act
-- for that tenant and no other, in that transaction only.

CREATE OR REPLACE FUNCTION kgrag.create_key(name text, tenants text[], role text DEFAULT 'reader',
                                            groups text[] DEFAULT '{}') RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    key text := 'kgk_' || replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '');
BEGIN
    IF name IS NULL OR name !~ '^[a-z0-9][a-z0-9_.-]{0,62}$' THEN
        RAISE EXCEPTION 'a key name is 1-63 lower-case letters, digits or _.- (starting with a letter or digit), got %',
            COALESCE(quote_literal(name), 'NULL') USING ERRCODE = '22023';
    END IF;
    IF tenants IS NULL OR cardinality(tenants) NOT BETWEEN 1 AND 100
       OR EXISTS (SELECT 1 FROM unnest(tenants) AS t(x)
                   WHERE x IS NULL OR x = '*' OR NOT kgrag_private.is_tenant_name(x)) THEN
        RAISE EXCEPTION 'a key acts for 1 to 100 tenants, each named as kgrag.use_tenant takes it (not ''*''), got %',
            COALESCE(quote_literal(tenants::text), 'NULL') USING ERRCODE = '22023';
    END IF;
    IF role IS NULL OR role NOT IN ('reader', 'writer') THEN
        RAISE EXCEPTION 'a key''s role is reader or writer, got %', COALESCE(quote_literal(role), 'NULL')
            USING ERRCODE = '22023';
    END IF;
    IF groups IS NULL OR cardinality(groups) > 32
       OR EXISTS (SELECT 1 FROM unnest(groups) AS g(x) WHERE x IS NULL OR x !~ '^[a-z0-9][a-z0-9_.-]{0,62}$') THEN
        RAISE EXCEPTION 'a key carries 0 to 32 groups, each 1-63 lower-case letters, digits or _.- (starting with a letter or digit), got %',
            COALESCE(quote_literal(groups::text), 'NULL') USING ERRCODE = '22023';
    END IF;
    IF EXISTS (SELECT 1 FROM kgrag_private.api_key AS k WHERE k.name = create_key.name) THEN
        RAISE EXCEPTION 'a key named % exists (revoked or not): choose another name', quote_literal(name)
            USING ERRCODE = '23505';
    END IF;
    INSERT INTO kgrag_private.api_key (name, key_hash, tenants, role, groups)
    SELECT create_key.name, encode(sha256(convert_to(key, 'UTF8')), 'hex'),
           ARRAY(SELECT DISTINCT x FROM unnest(tenants) AS t(x) ORDER BY x), create_key.role,
           ARRAY(SELECT DISTINCT x FROM unnest(groups) AS g(x) ORDER BY x);
    RETURN key;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag.create_key(text, text[], text, text[]) FROM PUBLIC;
COMMENT ON FUNCTION kgrag.create_key(text, text[], text, text[]) IS
'Makes an API key and returns it (kgk_ and 64 hex digits, 244 random bits): shown this once, the database keeps its sha256 only. The key acts for the tenants listed (1 to 100, never ''*'') as a reader (default) or a writer, through kgrag.use_key, holding the groups listed (0 to 32: what of documents for an audience it sees, kgrag.current_groups; none by default, so only documents for everyone). For the schema owner (pgkgrag keys create).';

CREATE OR REPLACE FUNCTION kgrag.list_keys()
RETURNS TABLE (name text, tenants text[], role text, groups text[], created_at timestamptz, revoked_at timestamptz)
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT k.name, k.tenants, k.role, k.groups, k.created_at, k.revoked_at FROM kgrag_private.api_key AS k ORDER BY k.name
$$;
REVOKE EXECUTE ON FUNCTION kgrag.list_keys() FROM PUBLIC;
COMMENT ON FUNCTION kgrag.list_keys() IS
'Returns every API key by name: (name, tenants, role, groups, created_at, revoked_at), never the key. For the schema owner (pgkgrag keys list).';

CREATE OR REPLACE FUNCTION kgrag.revoke_key(name text) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM kgrag_private.api_key AS k WHERE k.name = revoke_key.name) THEN
        RAISE EXCEPTION 'there is no key named %', COALESCE(quote_literal(name), 'NULL') USING ERRCODE = '42704';
    END IF;
    UPDATE kgrag_private.api_key AS k SET revoked_at = now() WHERE k.name = revoke_key.name AND k.revoked_at IS NULL;
    RETURN FOUND;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag.revoke_key(text) FROM PUBLIC;
COMMENT ON FUNCTION kgrag.revoke_key(text) IS
'Revokes an API key: from the next transaction on, kgrag.use_key refuses it (28P01). Returns false when it was revoked already; raises 42704 for a name no key has. The row stays, so the name is not given again. For the schema owner (pgkgrag keys revoke).';

CREATE OR REPLACE FUNCTION kgrag_private.check_key(key text, tenant text, acting name)
RETURNS TABLE (key_tenant text, key_role text, key_groups text, key_seal text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    k record;
BEGIN
    -- a key has one shape (kgrag.create_key): anything else is refused, never hashed (a row of
    -- NULLs when none matches)
    SELECT a.name, a.tenants, a.role, a.groups INTO k FROM kgrag_private.api_key AS a
     WHERE key ~ '^kgk_[0-9a-f]{64}$'
       AND a.key_hash = pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(key, 'UTF8')), 'hex')
       AND a.revoked_at IS NULL;
    IF k.name IS NULL THEN
        RAISE EXCEPTION 'the API key is not valid (unknown or revoked)' USING ERRCODE = '28P01';
    END IF;
    key_tenant := COALESCE(tenant, CASE WHEN pg_catalog.cardinality(k.tenants) = 1 THEN k.tenants[1] END);
    IF key_tenant IS NULL THEN
        RAISE EXCEPTION 'the key % acts for % tenants: name one', k.name, pg_catalog.cardinality(k.tenants)
            USING ERRCODE = '22023';
    END IF;
    IF NOT key_tenant = ANY (k.tenants) THEN
        RAISE EXCEPTION 'the key % may not act for tenant %', k.name, pg_catalog.quote_literal(key_tenant)
            USING ERRCODE = '42501';
    END IF;
    key_role := k.role;
    IF key_role = 'reader' AND (pg_catalog.pg_has_role(acting, 'kgrag_writer', 'USAGE')
                                OR pg_catalog.pg_has_role(acting, 'kgrag_curator', 'USAGE')) THEN
        RAISE EXCEPTION 'the key % is a reader''s, and role % may write', k.name, acting
            USING ERRCODE = '42501', HINT = 'Act as kgrag_reader first: SET ROLE kgrag_reader;';
    END IF;
    -- the seal covers the groups the key carries (kgrag_private.key_mac reads them back)
    key_groups := pg_catalog.array_to_string(k.groups, ',');
    PERFORM pg_catalog.set_config('kgrag.key_groups', key_groups, true);
    key_seal := kgrag_private.key_mac(key_tenant, kgrag_private.tenant_seal(key_tenant), key_role);
    RETURN NEXT;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag_private.check_key(text, text, name) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag_private.check_key(text, text, name) TO kgrag_reader, kgrag_writer, kgrag_curator;
COMMENT ON FUNCTION kgrag_private.check_key(text, text, name) IS
'Private. Returns (key_tenant, key_role, key_groups, key_seal) for an API key that is not revoked and may act for the tenant (NULL: its only tenant) with the role acting (a reader key: a role that may not write); raises 28P01 for a key that is not valid (unknown, revoked, or not of the shape kgrag.create_key makes: kgk_ and 64 hex digits), 42501 for a tenant or role it may not act for, 22023 when it has several tenants and none was named. SECURITY DEFINER, owned by the schema owner, because it reads kgrag_private.api_key and the seal''s secret; it returns the seal of this transaction only. kgrag.use_key calls it.';

CREATE OR REPLACE FUNCTION kgrag.use_key(key text, tenant text DEFAULT NULL) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    checked record;
BEGIN
    SELECT * INTO checked FROM kgrag_private.check_key(key, tenant, current_user);
    -- one tenant a transaction, whichever way it was named: checked before this key's seal
    -- replaces the one the transaction's tenant was sealed with
    IF current_setting('kgrag.tenant', true) IS DISTINCT FROM checked.key_tenant
       AND current_setting('kgrag.tenant', true) <> ''
       AND kgrag_private.sealed(current_setting('kgrag.tenant', true), current_setting('kgrag.tenant_seal', true)) THEN
        RAISE EXCEPTION 'this transaction already acts for tenant %', quote_literal(current_setting('kgrag.tenant', true))
            USING ERRCODE = '25001', HINT = 'A transaction has one tenant: use another transaction for another tenant.';
    END IF;
    -- SET LOCAL, as kgrag.use_tenant: on a Citus cluster the settings reach the workers, which check the seal
    IF to_regprocedure('pg_catalog.citus_backend_gpid()') IS NOT NULL THEN
        PERFORM set_config('citus.propagate_set_commands', 'local', true);
    END IF;
    EXECUTE format('SET LOCAL kgrag.tenant_seal TO %L', kgrag_private.tenant_seal(checked.key_tenant));
    EXECUTE format('SET LOCAL kgrag.key_role TO %L', checked.key_role);
    EXECUTE format('SET LOCAL kgrag.key_groups TO %L', checked.key_groups);
    EXECUTE 'SET LOCAL kgrag.groups TO ''''';  -- a narrowing named before the key does not carry over
    EXECUTE format('SET LOCAL kgrag.key_seal TO %L', checked.key_seal);
    RETURN kgrag.use_tenant(checked.key_tenant);
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag.use_key(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag.use_key(text, text) TO kgrag_reader, kgrag_writer, kgrag_curator;
COMMENT ON FUNCTION kgrag.use_key(text, text) IS
'Names the tenant of the current transaction from an API key (kgrag.create_key) and returns it, as kgrag.use_tenant does for a role''s grant: the key''s only tenant, or the one named, which the key must list. The session acts for that tenant in this transaction only, whatever its login role''s grants, holding the groups the key carries (kgrag.current_groups); a reader key needs a role that may not write (SET ROLE kgrag_reader). Raises 28P01 for an unknown or revoked key (or one not of the shape kgrag.create_key makes), 42501 for a tenant or role the key does not allow, 22023 for a key of several tenants with none named, 25001 when the transaction already acts for another tenant. pgkgrag serve calls it for every request.';
