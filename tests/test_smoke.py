def test_healthz_reports_real_database_and_redis(client, db):
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["redis"]["ok"] is True
    assert body["checks"]["pgvector"]["detail"].startswith("vector")
