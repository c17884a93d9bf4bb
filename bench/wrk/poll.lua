-- wrk script: GET /api/v1/tasks/$TASK with the bench key.
wrk.method = "GET"
wrk.path = "/api/v1/tasks/" .. os.getenv("TASK")
wrk.headers["Authorization"] = "Bearer " .. (os.getenv("KEY") or "bench-key-0123456789abcdef")
