package wire

// ErrorBody is the JSON body of every error response.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail holds the machine-readable code and a message for people.
type ErrorDetail struct {
	Code    APIErrorCode `json:"code"`
	Message string       `json:"message"`
}
