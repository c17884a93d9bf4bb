-- wrk script: POST /api/v1/generate with a JSON body and the bench key.
wrk.method = "POST"
wrk.path = "/api/v1/generate"
wrk.body = '{"scene":"text-to-image","prompt":"a lighthouse at dusk, oil painting","aspect_ratio":"16:9"}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. (os.getenv("KEY") or "bench-key-0123456789abcdef")
