export * from "@huggingface/transformers";
