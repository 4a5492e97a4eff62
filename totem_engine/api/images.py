"""Images a user attaches (a door decodes them from its wire) and the stored image parts a door
shows: the engine's own functions (images.py), named here for the doors."""

from totem_engine.images import (
    IMAGE_PART,
    MAX_IMAGE_BYTES,
    AttachmentError,
    caption,
    image_from_base64,
    image_from_bytes,
    image_of,
)
from totem_engine.vocab.messages import Image, size_text

__all__ = [
    "IMAGE_PART", "MAX_IMAGE_BYTES", "AttachmentError", "Image", "caption", "image_from_base64", "image_from_bytes",
    "image_of", "size_text",
]

# What a door checks an attachment's declared type against, and the data: URIs an editor may send.
from totem_engine.images import MIME_TYPES, image_from_data_uri

__all__ += ["MIME_TYPES", "image_from_data_uri"]
